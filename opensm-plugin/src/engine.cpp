// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's engine: snapshot swapping, policy loading, answering and the control thread.
#include "rdma-qos/opensm-plugin/engine.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <variant>

#include "rdma-qos/config/read_file.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/path_bits.h"

namespace rdmaqos::osmp {
namespace {

// A policy, partitions or opensm.conf file: a regular file only (config::read_regular_file), so
// a FIFO or device named by mistake never blocks OpenSM's thread.
std::optional<std::string> read_file(const std::string& path) {
  auto read = config::read_regular_file(path, config::kMaxPolicyFileBytes);
  if (auto* text = std::get_if<std::string>(&read)) return std::move(*text);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> policy_path(const Options& options, const OsmConfig& osm) {
  if (options.no_policy) return std::nullopt;
  if (options.policy) return options.policy;
  if (osm.qos_policy_file && access(osm.qos_policy_file->c_str(), R_OK) == 0)
    return osm.qos_policy_file;
  return std::nullopt;
}

Engine::Engine(Options options, OsmConfig osm, Log log, Snapshotter snapshotter)
    : options_(std::move(options)),
      osm_(std::move(osm)),
      log_(std::move(log)),
      snapshotter_(std::move(snapshotter)),
      // As rdma-qos-sad: table answers in one buffer the kernel cuts into RMPP segments, except
      // under ibsim's umad2sim, which has no RMPP (answers cut to one MAD, as OpenSM's are there).
      rmpp_(sad::use_rmpp(sad::RmppMode::kAuto)) {}

Engine::~Engine() {
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
  thread_ = std::thread([this] { run(); });
}

void Engine::refresh() {
  refresh_ = true;
  if (wake_[1] >= 0 && write(wake_[1], "x", 1) < 0) {
  }
}

std::optional<Sources> Engine::read_sources(std::vector<std::string>& diagnostics) const {
  Sources out;
  bool ok = true;
  out.partitions_path = options_.partitions;
  if (!out.partitions_path && osm_.partition_config_file &&
      access(osm_.partition_config_file->c_str(), R_OK) == 0)
    out.partitions_path = osm_.partition_config_file;
  if (out.partitions_path) {
    out.partitions_text = read_file(*out.partitions_path);
    if (!out.partitions_text) {
      diagnostics.push_back(fmt::format("{}: cannot read the file", *out.partitions_path));
      ok = false;
    }
  }
  out.policy_path = policy_path(options_, osm_);
  if (out.policy_path) {
    out.policy_text = read_file(*out.policy_path);
    if (!out.policy_text) {
      diagnostics.push_back(fmt::format("{}: cannot read the file", *out.policy_path));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

LoadResult Engine::load(std::shared_ptr<const sad::FabricModel> model,
                        const Sources& sources) const {
  namespace pol = rdmaqos::policy;
  LoadResult out;
  auto fabric = std::make_shared<pol::Fabric>(model->policy_fabric());
  bool ok = true;
  if (!sources.partitions_text) {
    fabric->partitions = pol::default_partitions(*fabric);
  } else {
    auto r = pol::parse_partitions(*sources.partitions_text, *fabric);
    for (const auto& d : r.diagnostics)
      out.diagnostics.push_back(pol::format_diagnostic(d, *sources.partitions_path));
    if (pol::has_errors(r.diagnostics)) ok = false;
    fabric->partitions = std::move(r.partitions);
  }
  std::shared_ptr<const pol::CompiledPolicy> policy;
  if (sources.policy_text) {
    auto r = pol::load_policy(*sources.policy_text, fabric.get());
    for (const auto& d : r.diagnostics)
      out.diagnostics.push_back(pol::format_diagnostic(d, *sources.policy_path));
    if (!r.policy) ok = false;
    policy = r.policy;
    if (policy) {
      for (const auto& d : sad::path_bits_warnings(*policy, *model))
        out.diagnostics.push_back(pol::format_diagnostic(d, *sources.policy_path));
    }
  }
  auto groups = std::make_shared<const std::vector<sad::MulticastGroup>>(
      sad::ipoib_broadcast_groups(fabric->partitions, osm_.subnet_timeout));
  if (ok)
    out.snapshot = Snapshot{std::move(model), std::move(fabric), std::move(policy),
                            std::move(groups), nullptr};
  return out;
}

void Engine::remember(const sad::FabricModel& model, const Sources& sources, const LoadResult& r) {
  ++compiles_;
  if (!r.snapshot) return;
  cache_.store({sources.policy_text, sources.partitions_text, model.policy_fabric()},
               {r.snapshot->policy_fabric, r.snapshot->policy, r.snapshot->groups});
}

LoadResult Engine::load_cached(std::shared_ptr<const sad::FabricModel> model,
                               const Sources& sources) {
  if (const CompiledOutputs* kept =
          cache_.find(sources.policy_text, sources.partitions_text, model->policy_fabric())) {
    ++compiles_skipped_;
    LoadResult out;
    out.snapshot =
        Snapshot{std::move(model), kept->policy_fabric, kept->policy, kept->groups, nullptr};
    return out;
  }
  LoadResult r = load(model, sources);
  remember(*model, sources, r);
  return r;
}

void Engine::install(Snapshot s) {
  s.levels = counters_.bind_policy(s.policy.get());
  current_.store(std::make_shared<const Snapshot>(std::move(s)));
}

bool Engine::rebuild() {
  FabricBuilder builder;
  if (!snapshotter_(builder)) {
    ++model_failures_;
    log_(true, "could not read OpenSM's subnet: the previous model stays in force");
    return false;
  }
  auto built = std::make_shared<sad::FabricModel>(builder.build());
  built->subnet_timeout = osm_.subnet_timeout;
  std::shared_ptr<const sad::FabricModel> model = std::move(built);
  last_model_ = model;
  // The files are read again at every new model, as OpenSM re-reads its QoS policy at every
  // heavy sweep, but compiled again only when they or the fabric's nodes changed; when they
  // have errors the last good ones answer on the new fabric.
  std::vector<std::string> diagnostics;
  std::optional<Sources> sources = read_sources(diagnostics);
  LoadResult r;
  if (sources) {
    r = load_cached(model, *sources);
    diagnostics.insert(diagnostics.end(), r.diagnostics.begin(), r.diagnostics.end());
  }
  const bool fresh_ok = r.snapshot.has_value();
  if (!fresh_ok && last_good_) r = load_cached(model, *last_good_);
  if (!fresh_ok && !policy_error_logged_) {
    // Said once per failing policy, not at every sweep.
    for (const auto& d : diagnostics) log_(true, d);
    log_(true, r.snapshot ? "the policy or partitions have errors: the previous ones stay in force"
                          : "the policy or partitions have errors: OpenSM's own PathRecord and "
                            "MultiPathRecord handlers answer");
    policy_error_logged_ = true;
  } else if (fresh_ok && models_ == 0) {
    for (const auto& d : diagnostics) log_(false, d);
  }
  if (fresh_ok) {
    policy_error_logged_ = false;
    last_good_ = std::move(sources);
  }
  if (!r.snapshot) {
    ++model_failures_;
    return false;
  }
  const size_t endpoints = model->endpoints().size();
  const bool first = !ready();
  const size_t rules = r.snapshot->policy ? r.snapshot->policy->rules().size() : 0;
  const bool has_policy = r.snapshot->policy != nullptr;
  install(std::move(*r.snapshot));
  ++models_;
  if (first) {
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
  std::vector<std::string> diagnostics;
  std::optional<Sources> sources = read_sources(diagnostics);
  LoadResult r;
  if (sources) {
    // Compiled even when unchanged: whoever asks for a reload wants to see its diagnostics.
    r = load(last_model_, *sources);
    remember(*last_model_, *sources, r);
    diagnostics.insert(diagnostics.end(), r.diagnostics.begin(), r.diagnostics.end());
  }
  for (const auto& d : diagnostics) {
    reply["diagnostics"].push_back(d);
    log_(!r.snapshot, d);
  }
  if (r.snapshot) {
    install(std::move(*r.snapshot));
    last_good_ = std::move(sources);
    ++reloads_;
    policy_error_logged_ = false;
    reply["ok"] = true;
    reply["message"] = "policy reloaded";
  } else {
    ++reload_failures_;
    reply["message"] = ready() ? "policy reload failed: the previous policy stays in force"
                               : "policy reload failed: OpenSM's own handlers keep answering";
  }
  log_(!r.snapshot, reply["message"].get<std::string>());
  return reply;
}

nlohmann::json Engine::stats() const {
  nlohmann::json j = sad::to_json(counters_.snapshot());
  auto now = current_.load();
  j["plugin"] = {{"pid", getpid()},
                 {"answering", now != nullptr},
                 {"fallbacks", fallbacks_.load()},
                 {"uptime_seconds", std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::steady_clock::now() - started_)
                                        .count()}};
  auto path = policy_path(options_, osm_);
  j["policy"] = {{"file", path ? nlohmann::json(*path) : nlohmann::json(nullptr)},
                 {"rules", now && now->policy ? now->policy->rules().size() : 0},
                 {"reloads", reloads_.load()},
                 {"compiles", compiles_.load()},
                 {"compiles_skipped", compiles_skipped_.load()},
                 {"reload_failures", reload_failures_.load()}};
  j["fabric"] = {{"endpoints", now ? now->model->endpoints().size() : 0},
                 {"models", models_.load()},
                 {"model_failures", model_failures_.load()}};
  return j;
}

Engine::Outcome Engine::answer(std::span<const uint8_t> bytes, uint16_t slid, const Send& send) {
  std::shared_ptr<const Snapshot> now = current_.load();
  if (!now) {
    ++fallbacks_;
    return Outcome::kFallback;
  }
  try {
    auto mad = sa::decode_sa_mad(bytes);
    if (!mad) {
      ++fallbacks_;  // OpenSM's handler answers what we cannot decode, as it would alone
      return Outcome::kFallback;
    }
    if ((mad->mad.method & sa::method::kResponseBit) != 0) return Outcome::kDropped;
    if (!sad::sm_key_accepted(*mad, osm_.sa_key)) {
      counters_.dropped_sm_key();
      return Outcome::kDropped;
    }
    sad::AnswerContext ctx;
    ctx.fabric = now->model.get();
    ctx.set_requester_lid(slid);
    if (ctx.requester_unknown) {
      // OpenSM's handler decides, as without us: it drops the request too when its subnet does
      // not know the LID either (the model is a copy of it), and answers when the copy is behind.
      ++fallbacks_;
      return Outcome::kFallback;
    }
    const auto received = std::chrono::steady_clock::now();
    counters_.request(mad->mad.method, mad->mad.attr_id);
    sad::CountingObserver observer(counters_, *now->levels);
    ctx.policy = now->policy.get();
    ctx.partitions = &now->policy_fabric->partitions;
    ctx.sa_key = osm_.sa_key;
    ctx.groups = now->groups.get();
    ctx.observer = &observer;
    auto response = sad::answer(ctx, *mad);
    if (!response) return Outcome::kDropped;
    counters_.latency(std::chrono::steady_clock::now() - received);
    counters_.response(response->mad.status);
    std::vector<uint8_t> out = sad::encode_answer(std::move(*response), rmpp_, sa::kSaDataSize);
    send(out);
    return Outcome::kAnswered;
  } catch (...) {
    ++fallbacks_;
    return Outcome::kFallback;
  }
}

void Engine::share_control_socket() {
  if (!options_.control_socket_group) return;
  const std::string& name = *options_.control_socket_group;
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  if (getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    log_(true, fmt::format("control socket: no group '{}': only root may use it", name));
    return;
  }
  const std::string& path = control_->path();
  if (chown(path.c_str(), static_cast<uid_t>(-1), found->gr_gid) != 0 ||
      chmod(path.c_str(), 0660) != 0) {
    log_(true, fmt::format("control socket {}: cannot give it to group {}: {}", path, name,
                           std::strerror(errno)));
    return;
  }
  log_(false, fmt::format("control socket {}: group {} may read the stats", path, name));
}

bool Engine::refused_to_group_member(int connection, const std::string& command) {
  if (command != "reload" && command != "rediscover") return false;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
      (cred.uid == 0 || cred.uid == geteuid()))
    return false;
  control_->reply(connection,
                  {{"ok", false},
                   {"message", fmt::format("{} needs root: the control socket's group may only "
                                           "read the stats",
                                           command)}});
  return true;
}

void Engine::handle(int connection, const nlohmann::json& body) {
  const std::string command = body["command"].get<std::string>();
  if (refused_to_group_member(connection, command)) return;
  if (command == "reload") {
    control_->reply(connection, reload());
  } else if (command == "stats") {
    control_->reply(connection, {{"ok", true}, {"stats", stats()}});
  } else if (command == "explain") {
    control_->reply(connection, explain(body));
  } else if (command == "rediscover") {
    // No discovery of our own: OpenSM's subnet is read again.
    bool ok = rebuild();
    auto now = current_.load();
    std::string message =
        ok ? fmt::format("fabric re-discovered: {} endpoints (OpenSM's subnet)",
                         now->model->endpoints().size())
           : std::string("re-discovery failed: the previous model stays in force");
    log_(!ok, message);
    control_->reply(connection, {{"ok", ok}, {"message", message}});
  } else {
    control_->reply(
        connection,
        {{"ok", false},
         {"message",
          fmt::format("unknown command '{}' (reload, rediscover, stats, explain)", command)}});
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
