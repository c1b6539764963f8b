// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's engine: snapshot swapping, policy loading, answering and the control thread.
#include "rdma-qos/opensm-plugin/engine.h"

#include "opensm_decides.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

#include <variant>

#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/path_bits.h"

namespace rdmaqos::osmp {
Engine::Engine(Options options, OsmConfig osm, Log log, Snapshotter snapshotter, PathSl path_sl)
    : options_(std::move(options)),
      osm_(std::move(osm)),
      log_(std::move(log)),
      snapshotter_(std::move(snapshotter)),
      routing_sl_(std::move(path_sl)),
      // As rdma-qos-sad: table answers in one buffer the kernel cuts into RMPP segments, except
      // under ibsim's umad2sim, which has no RMPP (answers cut to one MAD, as OpenSM's are there).
      rmpp_(sad::use_rmpp(sad::RmppMode::kAuto)),
      // As rdma-qos-sad: a table too long or an answer too late is ERR_NO_RESOURCES (counted in
      // stats' bounded), so one query cannot hold the thread that answers it for long.
      service_(sad::ServiceOptions{osm_.sa_key, options_.max_records, options_.answer_time_limit,
                                   options_.answer_threads, &routing_sl_}),
      source_(std::make_unique<PolicySource>(options_, osm_)) {}

uint8_t Engine::RoutingSl::path_sl(uint8_t hint, uint16_t slid, uint16_t dlid) const {
  const int sl = path_sl_ ? path_sl_(hint, slid, dlid) : -1;
  return sl >= 0 && sl < 16 ? static_cast<uint8_t>(sl) : hint;
}

Engine::~Engine() {
  service_.stop_workers();  // waits for the answers under way, drops the queued
  stop_ = true;
  if (wake_[1] >= 0 && write(wake_[1], "x", 1) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  control_.reset();
  for (int fd : wake_)
    if (fd >= 0) close(fd);
}

void Engine::start() {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
  if (!options_.control_socket.empty()) {
    auto server = sad::ControlServer::open(options_.control_socket);
    if (server) {
      control_ = std::move(*server);
      log_(false, "control socket " + control_->path());
      share_control_socket();
    } else {
      log_(true, "no control socket: " + server.error().message);
    }
  }
  log_(false,
       rmpp_ ? "RMPP on: table answers of any length" : "RMPP off: table answers cut to one MAD");
  if (!osm_.qos) {
    log_(true,
         "OpenSM runs with qos FALSE: it answers every path SL 0 and programs no QoS tables, so "
         "the policy does not apply and OpenSM's own PathRecord and MultiPathRecord handlers "
         "answer (set qos TRUE in opensm.conf to apply it)");
  }
  // The plugin's threads start with every signal blocked, and keep them so: OpenSM's signals
  // (SIGHUP to re-read its configuration, SIGTERM) stay on OpenSM's own threads.
  // The calling thread (OpenSM's) gets its own mask back however this ends.
  struct BlockedHere {
    sigset_t before;
    BlockedHere() {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &before);
    }
    ~BlockedHere() { pthread_sigmask(SIG_SETMASK, &before, nullptr); }
    BlockedHere(const BlockedHere&) = delete;
    BlockedHere& operator=(const BlockedHere&) = delete;
  } blocked;
  service_.start_workers();
  thread_ = std::thread([this] { run(); });
}

void Engine::refresh() {
  refresh_ = true;
  if (wake_[1] >= 0 && write(wake_[1], "x", 1) < 0) {
  }
}

LoadResult Engine::load(std::shared_ptr<const sad::FabricModel> model,
                        const PolicyInputs& inputs) const {
  sad::StateInputs in;
  auto file = [](const FileContents& f) {
    return sad::StateFile{f.path, f.text, f.error ? f.error->message : std::string()};
  };
  if (inputs.partitions) in.partitions = file(*inputs.partitions);
  if (inputs.policy) in.policy = file(*inputs.policy);
  // Parsed once by PolicySource, for the qos-setup scopes too.
  in.parsed = inputs.parsed;
  in.subnet_timeout = osm_.subnet_timeout;
  return sad::load_answer_state(std::move(model), in);
}

void Engine::remember(const sad::FabricModel& model, const PolicyInputs& inputs,
                      const LoadResult& r) {
  ++compiles_;
  if (!r.state) return;
  cache_.store({inputs.policy_version(), inputs.partitions_version(), model.policy_fabric()},
               {r.state->policy_fabric, r.state->policy, r.state->groups});
}

LoadResult Engine::load_cached(std::shared_ptr<const sad::FabricModel> model,
                               const PolicyInputs& inputs) {
  if (const CompiledOutputs* kept = cache_.find(
          inputs.policy_version(), inputs.partitions_version(), model->policy_fabric())) {
    ++compiles_skipped_;
    LoadResult out;
    out.state = sad::AnswerState{std::move(model), kept->policy_fabric, kept->policy, kept->groups};
    return out;
  }
  LoadResult r = load(model, inputs);
  remember(*model, inputs, r);
  return r;
}

void Engine::log_once(const PolicyInputs& inputs, bool error, const std::string& line) {
  const std::pair<uint64_t, uint64_t> versions{inputs.policy_version(),
                                               inputs.partitions_version()};
  if (versions != logged_versions_) {
    logged_versions_ = versions;
    logged_.clear();
  }
  if (logged_.insert(line).second) log_(error, line);
}

void Engine::hand_over(const std::string& why) {
  // Answers from the previous model would name old LIDs and forwarding tables, and its policy
  // may no longer fit the fabric: OpenSM's own handlers answer until a model can be built.
  service_.clear();
  handover_why_.store(std::make_shared<const std::string>(why));
  if (!handed_over_.exchange(true))
    log_(true, why + ": OpenSM's own PathRecord and MultiPathRecord handlers answer");
}

nlohmann::json Engine::handover_reason(bool answering) const {
  if (!osm_.qos) return "OpenSM runs with qos FALSE";
  if (paused_) return "paused through the control socket";
  if (answering) return nullptr;
  if (auto why = handover_why_.load(); why && handed_over_) return *why;
  return "no model of OpenSM's subnet yet";
}

bool Engine::rebuild() {
  FabricBuilder builder;
  // The copy is made under OpenSM's lock (read side): a sweep waits for it, so its time is
  // OpenSM's and kept in the stats.
  const auto copy_started = std::chrono::steady_clock::now();
  const bool copied = snapshotter_(builder);
  const uint64_t copy_ns =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - copy_started)
                                .count());
  snapshot_ns_last_ = copy_ns;
  if (copy_ns > snapshot_ns_max_) snapshot_ns_max_ = copy_ns;
  if (!copied) {
    ++model_failures_;
    hand_over("could not read OpenSM's subnet");
    return false;
  }
  auto built = std::make_shared<sad::FabricModel>(builder.build());
  routing_.store(std::make_shared<const sad::RoutingFacts>(built->routing));
  built->subnet_timeout = osm_.subnet_timeout;
  std::shared_ptr<const sad::FabricModel> model = std::move(built);
  last_model_ = model;
  // The files are looked at again at every new model, as OpenSM re-reads its QoS policy at
  // every heavy sweep, but read again only when they changed (PolicySource) and compiled again
  // only when they or the fabric's nodes changed; when they have errors the last good ones
  // answer on the new fabric. Every diagnostic is logged once per version of the files.
  std::shared_ptr<const PolicyInputs> inputs = source_->current();
  LoadResult r = load_cached(model, *inputs);
  const bool fresh_ok = r.state.has_value();
  for (size_t i = 0; i < r.diagnostics.size(); ++i)
    log_once(*inputs, !fresh_ok && r.errors[i], r.diagnostics[i]);
  if (!fresh_ok) {
    if (last_good_) r = load_cached(model, *last_good_);
    if (r.state)
      log_once(*inputs, true,
               "the policy or partitions have errors: the previous ones stay in force");
  } else {
    last_good_ = std::move(inputs);
  }
  if (!r.state) {
    ++model_failures_;
    hand_over("the policy or partitions have errors");
    return false;
  }
  const size_t endpoints = model->endpoints().size();
  const bool first = !ready();
  const size_t rules = r.state->policy ? r.state->policy->rules().size() : 0;
  const bool has_policy = r.state->policy != nullptr;
  service_.install(std::move(*r.state));
  ++models_;
  if (handed_over_.exchange(false)) {
    log_(false,
         "a model of OpenSM's current subnet is in force again: answering PathRecord and "
         "MultiPathRecord");
  } else if (first) {
    log_(false, fmt::format("answering PathRecord and MultiPathRecord: {} endpoints, {}", endpoints,
                            has_policy ? fmt::format("{} policy rules", rules)
                                       : std::string("no policy (partition SLs)")));
  }
  return true;
}

nlohmann::json Engine::reload() {
  nlohmann::json reply = {{"ok", false}, {"diagnostics", nlohmann::json::array()}};
  if (!last_model_) {
    reply["message"] = "no fabric model yet (OpenSM has not brought the subnet up)";
    return reply;
  }
  // Read and compiled even when unchanged: whoever asks for a reload wants to see its
  // diagnostics.
  std::shared_ptr<const PolicyInputs> inputs = source_->current(true);
  LoadResult r = load(last_model_, *inputs);
  remember(*last_model_, *inputs, r);
  for (const auto& d : r.diagnostics) {
    reply["diagnostics"].push_back(d);
    log_(!r.state, d);
  }
  if (r.state) {
    service_.install(std::move(*r.state));
    last_good_ = std::move(inputs);
    ++reloads_;
    reply["ok"] = true;
    reply["message"] = "policy reloaded";
  } else {
    ++reload_failures_;
    reply["message"] = ready() ? "policy reload failed: the previous policy stays in force"
                               : "policy reload failed: OpenSM's own handlers keep answering";
  }
  log_(!r.state, reply["message"].get<std::string>());
  return reply;
}

nlohmann::json Engine::stats() const {
  const sad::CounterSnapshot counts = service_.counters().snapshot();
  nlohmann::json j = sad::to_json(counts);
  auto now = service_.current();
  j["plugin"] = {{"pid", getpid()},
                 {"answering", now != nullptr && osm_.qos && !paused_},
                 {"handed_to_opensm", handover_reason(now != nullptr)},
                 {"fallbacks", fallbacks_.load()},
                 {"uptime_seconds", std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::steady_clock::now() - started_)
                                        .count()}};
  auto path = policy_path(options_, osm_);
  j["policy"] = {{"file", path ? nlohmann::json(*path) : nlohmann::json(nullptr)},
                 {"rules", now && now->policy ? now->policy->rules().size() : 0},
                 {"reloads", reloads_.load()},
                 {"reads", source_->reads()},
                 {"parses", source_->parses()},
                 {"compiles", compiles_.load()},
                 {"compiles_skipped", compiles_skipped_.load()},
                 {"reload_failures", reload_failures_.load()}};
  j["qos_setup"] = {{"heavy_sweeps", qos_setup_.heavy_sweeps.load()},
                    {"builds", qos_setup_.builds.load()},
                    {"scopes", qos_setup_.scopes.load()}};
  if (auto routing = routing_.load()) {
    j["routing"] = {{"engine", routing->engine},
                    {"assigns_sl", routing->assigns_sl},
                    {"programs_sl2vl", routing->programs_sl2vl},
                    {"qos_setup_applied", !engine_keeps_own_tables(*routing)}};
  }
  nlohmann::json reasons = nlohmann::json::object();
  for (size_t i = 0; i < fallback_reasons_.size(); ++i) {
    if (uint64_t n = fallback_reasons_[i].load())
      reasons[fallback_name(static_cast<Fallback>(i))] = n;
  }
  j["fallback_reasons"] = std::move(reasons);
  j["fabric"] = {{"endpoints", now ? now->model->endpoints().size() : 0},
                 {"models", models_.load()},
                 {"snapshot_seconds", static_cast<double>(snapshot_ns_last_.load()) / 1e9},
                 {"snapshot_seconds_max", static_cast<double>(snapshot_ns_max_.load()) / 1e9},
                 {"model_failures", model_failures_.load()}};
  j["metrics"] = common::metrics::to_json(metrics(counts));
  return j;
}

Engine::Outcome Engine::hand_to_opensm(Fallback why) {
  ++fallbacks_;
  ++fallback_reasons_[static_cast<size_t>(why)];
  return Outcome::kFallback;
}

const char* fallback_name(Engine::Fallback why) {
  switch (why) {
    case Engine::Fallback::kNoModel: return "no_model";
    case Engine::Fallback::kQosOff: return "qos_off";
    case Engine::Fallback::kPaused: return "paused";
    case Engine::Fallback::kUndecodable: return "undecodable";
    case Engine::Fallback::kUnknownRequester: return "unknown_requester";
    case Engine::Fallback::kMultiPathRoutingSl: return "multipath_routing_sl";
    case Engine::Fallback::kMulticast: return "multicast";
    case Engine::Fallback::kUnknownPort: return "unknown_port";
    case Engine::Fallback::kNoPkeyTable: return "no_pkey_table";
    case Engine::Fallback::kAliasedPort: return "aliased_port";
    case Engine::Fallback::kInactivePort: return "inactive_port";
    case Engine::Fallback::kFailed: return "failed";
  }
  return "?";
}

bool Engine::compute(const sa::SaMad& mad, const sad::DecodedQuery& decoded, uint16_t slid,
                     const Snapshot& now, std::chrono::steady_clock::time_point received,
                     const Send& send) {
  auto computed = service_.compute(mad, decoded, slid, now, received);
  if (!computed.answer) return false;
  send(sad::encode_answer(std::move(*computed.answer), rmpp_, sa::kSaDataSize));
  return true;
}

Engine::Outcome Engine::answer(std::span<const uint8_t> bytes, uint16_t slid, Send send,
                               bool may_defer) {
  if (!osm_.qos) return hand_to_opensm(Fallback::kQosOff);
  if (paused_) return hand_to_opensm(Fallback::kPaused);
  std::shared_ptr<const Snapshot> now = service_.current();
  if (!now) return hand_to_opensm(Fallback::kNoModel);
  try {
    auto mad = sa::decode_sa_mad(bytes);
    // OpenSM's handler answers what we cannot decode, as it would alone.
    if (!mad) return hand_to_opensm(Fallback::kUndecodable);
    if ((mad->mad.method & sa::method::kResponseBit) != 0) return Outcome::kDropped;
    if (!sad::sm_key_accepted(*mad, osm_.sa_key)) {
      service_.counters().dropped_sm_key();
      return Outcome::kDropped;
    }
    const auto received = std::chrono::steady_clock::now();
    sad::AnswerContext ctx = service_.context(*now, slid, received);
    // OpenSM's handler decides, as without us: it drops the request too when its subnet does
    // not know the LID either (the model is a copy of it), and answers when the copy is behind.
    if (ctx.requester_unknown) return hand_to_opensm(Fallback::kUnknownRequester);
    // The record decoded once: for OpenSM's rules, the work estimate and the answer.
    const sad::DecodedQuery decoded = sad::decode_query(*mad);
    if (auto why = opensm_decides(*mad, decoded, *now, ctx)) return hand_to_opensm(*why);
    service_.counters().request(mad->mad.method, mad->mad.attr_id);
    // A large answer leaves OpenSM's dispatcher thread, which also carries the SM's own work.
    if (may_defer) {
      auto make_task = [&]() -> sad::AnswerPool::Task {
        return [this, request = *mad, decoded, slid, now, received, send] {
          // OpenSM's handler cannot take the request any more (its MAD went back to OpenSM's
          // pool): on a failure nothing is sent, and the requester's retry comes back.
          try {
            compute(request, decoded, slid, *now, received, send);
          } catch (const std::exception& e) {
            log_(true, std::string("a large answer failed, none sent: ") + e.what());
          } catch (...) {
            log_(true, "a large answer failed, none sent");
          }
        };
      };
      using Placement = sad::AnswerService::Placement;
      auto placed = service_.place(
          *mad, decoded, slid, *now, [&]() -> const sad::AnswerContext& { return ctx; }, received,
          make_task);
      switch (placed.placement) {
        case Placement::kHere: break;
        case Placement::kQueued: return Outcome::kDeferred;
        case Placement::kDuplicate: return Outcome::kDropped;
        case Placement::kBusy:
          send(sad::encode_answer(std::move(*placed.busy), rmpp_, sa::kSaDataSize));
          return Outcome::kAnswered;
      }
    }
    return compute(*mad, decoded, slid, *now, received, send) ? Outcome::kAnswered
                                                              : Outcome::kDropped;
  } catch (...) {
    return hand_to_opensm(Fallback::kFailed);
  }
}

void Engine::share_control_socket() {
  if (!options_.control_socket_group) return;
  const std::string& name = *options_.control_socket_group;
  auto gid = sad::control_group_id(name);
  if (!gid) {
    log_(true, fmt::format("control socket: no group '{}': only root may use it", name));
    return;
  }
  if (auto shared = control_->share_with_group(*gid); !shared) {
    log_(true, shared.error().message);
    return;
  }
  log_(false,
       fmt::format("control socket {}: group {} may read the stats", control_->path(), name));
}

void Engine::handle(int connection, const nlohmann::json& body) {
  using sad::ControlAction;
  auto command = sad::read_control_command(body);
  if (!command) {
    control_->reply(connection, {{"ok", false}, {"message", command.error().message}});
    return;
  }
  if (auto refused =
          sad::refusal_for_peer(connection, *command, body["command"].get<std::string>())) {
    control_->reply(connection, *refused);
    return;
  }
  if (command->action == ControlAction::kReload) {
    control_->reply(connection, reload());
  } else if (command->action == ControlAction::kStats) {
    control_->reply(connection, {{"ok", true}, {"stats", stats()}});
  } else if (command->action == ControlAction::kExplain) {
    control_->reply(connection, explain(body));
  } else if (command->action == ControlAction::kPause ||
             command->action == ControlAction::kResume) {
    const bool pause = command->action == ControlAction::kPause;
    const bool was = paused_.exchange(pause);
    std::string message =
        pause ? "paused: OpenSM's own PathRecord and MultiPathRecord handlers answer until resume"
              : "resumed: the plugin answers PathRecord and MultiPathRecord again";
    if (was != pause) log_(false, message);
    control_->reply(connection, {{"ok", true}, {"message", message}});
  } else {
    // No discovery of our own: OpenSM's subnet is read again (`full` changes nothing).
    bool ok = rebuild();
    auto now = service_.current();
    std::string message =
        ok ? fmt::format("fabric re-discovered: {} endpoints (OpenSM's subnet)",
                         now->model->endpoints().size())
           : std::string("re-discovery failed: the previous model stays in force");
    log_(!ok, message);
    control_->reply(connection, {{"ok", ok}, {"message", message}});
  }
}

void Engine::run() {
  while (!stop_) {
    if (refresh_.exchange(false)) {
      try {
        rebuild();
      } catch (const std::exception& e) {
        ++model_failures_;
        log_(true, std::string("model not rebuilt: ") + e.what());
      }
    }
    std::vector<pollfd> fds;
    if (wake_[0] >= 0) fds.push_back({wake_[0], POLLIN, 0});
    const size_t control_at = fds.size();
    if (control_) control_->add_poll_fds(fds);
    int rc = poll(fds.data(), fds.size(), 500);
    if (rc <= 0) continue;
    if (wake_[0] >= 0 && fds[0].revents != 0) {
      char buf[64];
      while (read(wake_[0], buf, sizeof(buf)) > 0) {
      }
    }
    if (control_) {
      try {
        auto control_fds = std::span<const pollfd>(fds).subspan(control_at);
        for (auto& request : control_->process(control_fds))
          handle(request.connection, request.body);
      } catch (const std::exception& e) {
        log_(true, std::string("control socket: ") + e.what());
      }
    }
  }
}

}  // namespace rdmaqos::osmp
