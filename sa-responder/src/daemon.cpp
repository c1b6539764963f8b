// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's daemon: loading the policy against the discovered model, answering MADs on the
// main thread (large answers on worker threads) and serving the control socket, signals and
// re-discovery on a second one.
#include "daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "rdma-qos/common/service.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-responder/answer_service.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/counters.h"
#include "rdma-qos/sa-responder/discovery_json.h"
#include "rdma-qos/sa-responder/explain.h"
#include "rdma-qos/sa-responder/path_bits.h"
#include "rdma-qos/sa-responder/rediscovery_trigger.h"
#include "rdma-qos/sa-responder/trap_subscription.h"
#include "rediscovery_child.h"

namespace rdmaqos::sad {

common::Logger& logger() {
  static common::Logger the_logger("rdma-qos-sad");
  return the_logger;
}
void log(const std::string& line) {
  logger().info(line);
}
void log_error(const std::string& line) {
  logger().error(line);
}
void log_diagnostic(const std::string& line) {
  if (line.find(": error: ") != std::string::npos)
    logger().diagnostic(common::Priority::kError, line);
  else if (line.find(": warning: ") != std::string::npos)
    logger().diagnostic(common::Priority::kWarning, line);
  else
    logger().info(line);
}

namespace {

using Clock = std::chrono::steady_clock;

// Set by the signal handler and read by both threads (g_stop is also set by the SA thread when
// the device goes away): atomics, since volatile orders nothing between threads; lock-free, so
// a signal handler may set them.
static_assert(std::atomic<bool>::is_always_lock_free);
std::atomic<bool> g_reload{false};
std::atomic<bool> g_rediscover{false};
std::atomic<bool> g_stop{false};

void on_signal(int sig) {
  if (sig == SIGHUP) g_reload = true;
  if (sig == SIGUSR1) g_rediscover = true;
  if (sig == SIGTERM || sig == SIGINT) g_stop = true;
}

}  // namespace

// No SA_RESTART: a signal interrupts poll() so it is handled at once.
void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGHUP, SIGUSR1, SIGTERM, SIGINT}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// A policy, partitions or opensm.conf file: a regular file only (config::read_regular_file), so
// a FIFO or device named by mistake never blocks the daemon.
int refuse_unanswered(const Discovery& found, uint64_t m_key, const std::string& action) {
  auto refused = m_key_refusal(found, m_key);
  if (!refused) return 0;
  for (const std::string& u : found.unanswered) log_error("discovery: " + u);
  log_error("discovery: " + refused->message + ": " + action);
  return kExitConfig;
}

rdmaqos::Result<std::string> read_file(const std::string& path) {
  return config::read_regular_file(path, config::kMaxPolicyFileBytes);
}

namespace {

// The files of `config` as they are now, for load_answer_state.
rdmaqos::sad::StateInputs state_inputs(const Config& config) {
  rdmaqos::sad::StateInputs in;
  auto file = [](const std::string& path) {
    rdmaqos::sad::StateFile f;
    f.path = path;
    if (auto text = read_file(path))
      f.text = std::make_shared<const std::string>(std::move(*text));
    else
      f.error = text.error().message;
    return f;
  };
  if (!config.partitions_path.empty()) in.partitions = file(config.partitions_path);
  if (!config.no_policy) in.policy = file(config.policy_path);
  in.qos = config.qos;
  in.subnet_timeout = static_cast<uint8_t>(config.subnet_timeout);
  return in;
}

// Partitions and policy against `model`; diagnostics of both files, in order.
rdmaqos::sad::StateLoad load(const Config& config,
                             std::shared_ptr<const rdmaqos::sad::FabricModel> model) {
  return rdmaqos::sad::load_answer_state(std::move(model), state_inputs(config));
}

// The model discovery found, with the configured packet life.
std::shared_ptr<const rdmaqos::sad::FabricModel> model_of(Discovery& d, const Config& config) {
  d.model.subnet_timeout = static_cast<uint8_t>(config.subnet_timeout);
  d.model.original_extended_rates_only = config.original_extended_rates_only;
  return std::make_shared<const rdmaqos::sad::FabricModel>(std::move(d.model));
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// How often the control thread reads the port's LIDs (cheap sysfs reads).
constexpr std::chrono::seconds kLidCheckInterval{2};
// How long the MAD layer waits for the SM's answer to one of our Sets (it sends it once more).
constexpr std::chrono::milliseconds kSetResponseTimeout{1000};
// How long the exit waits for the SM's answers to the unsubscriptions.
constexpr std::chrono::milliseconds kUnsubscribeWait{500};

// Per-MAD port errors in the log: the first at once, then at most one line a minute saying how
// many came meanwhile (a burst of refused sends must not flood the journal; stats counts all).
class MadErrorLog {
 public:
  void failed(const std::string& what, Clock::time_point now) {
    ++since_;
    if (logged_ && now - *logged_ < kEvery) return;
    log_error(since_ > 1 ? fmt::format("{} ({} MAD errors since the last line; serving goes on)",
                                       what, since_)
                         : what + " (serving goes on)");
    logged_ = now;
    since_ = 0;
  }

 private:
  static constexpr std::chrono::minutes kEvery{1};
  std::optional<Clock::time_point> logged_;
  uint64_t since_ = 0;
};

}  // namespace

// Two threads: the main thread answers MADs (umad2sim's poll does not mix its descriptors with
// real ones, so the SA port is served on its own), handing answers that expand to many pairs to
// worker threads (AnswerPool), which send them when ready; the control thread serves the control
// socket, signals, the re-discovery child and its period, and swaps in new snapshots. A reload
// never stalls answering: the answer path only loads the current snapshot.
class Daemon::Impl {
 public:
  Impl(Config config, rdmaqos::sad::DiscoveryOptions discovery, DaemonOptions options)
      : config_(std::move(config)),
        discovery_(std::move(discovery)),
        options_(options),
        service_(rdmaqos::sad::ServiceOptions{config_.sa_key, options_.max_records,
                                              options_.answer_time_limit, options_.answer_threads,
                                              nullptr}) {}
  // The workers' tasks use the agent and the members after the service: they stop first.
  ~Impl() { service_.stop_workers(); }

  int start() {
    // A policy that cannot compile even without the fabric fails at once, before a discovery
    // that may itself fail (a RoCE port has no SMPs) and would make systemd restart the unit.
    if (!config_.no_policy) {
      auto text = read_file(config_.policy_path);
      if (!text) {
        log_error(fmt::format("{}: cannot read the file ({}): not starting", config_.policy_path,
                              text.error().message));
        return kExitConfig;
      }
      auto checked = policy::load_policy(*text, nullptr);
      if (!checked.policy) {
        for (const auto& d : checked.diagnostics)
          log_diagnostic(rdmaqos::format_diagnostic(d, config_.policy_path));
        log_error("the policy or partitions have errors: not starting");
        return kExitConfig;
      }
    }
    rdmaqos::sad::DiscoveryOptions first = discovery_;
    first.progress = [](const std::string& s) { log("discovery: " + s); };
    auto found = rdmaqos::sad::discover_fabric(first);
    if (!found) {
      log_error("discovery failed: " + found.error().message);
      return kExitFailure;
    }
    // Nodes that answered nothing across a live link (M_Key protection): the model would lack
    // them, which is worse than no SA at all; a configuration error (the M_Key).
    if (int status = refuse_unanswered(*found, discovery_.m_key, "not starting"); status != 0)
      return status;
    // With no model yet, an incomplete one is all there is: answer from it, say so, and let the
    // next complete re-discovery replace it.
    for (const auto& w : found->missing) log("discovery: " + w);
    for (const auto& w : found->warnings) log_error("discovery: " + w);
    if (auto why = rdmaqos::sad::replacement_refused(*found)) {
      log("discovery " + why->message + ": answering from it until a complete re-discovery");
    }
    // The model in force as its JSON line: what an incremental re-discovery starts from.
    if (found->missing.empty()) model_json_ = rdmaqos::sad::fabric_json_line(*found);
    rdmaqos::sad::StateLoad loaded = load(config_, model_of(*found, config_));
    for (const auto& d : loaded.diagnostics) log_diagnostic(d);
    if (!loaded.state) {
      log_error("the policy or partitions have errors: not starting");
      return kExitConfig;
    }
    install(std::move(*loaded.state));
    last_discovery_ = std::chrono::system_clock::now();
    next_discovery_ = Clock::now() + options_.rediscover_interval;
    ++discoveries_;

    rdmaqos::sad::AgentOptions agent_options;
    agent_options.ca = discovery_.ca;
    agent_options.port = discovery_.port;
    agent_options.issm = options_.issm;
    agent_options.rmpp = rdmaqos::sad::use_rmpp(options_.rmpp);
    log(agent_options.rmpp ? "RMPP on: table answers of any length"
                           : "RMPP off: table answers cut to one MAD");
    auto agent = rdmaqos::sad::SaAgent::open(agent_options);
    if (!agent) {
      log_error("cannot open the SA agent: " + agent.error().message);
      return kExitFailure;
    }
    agent_ = std::move(*agent);
    trigger_.emplace(rdmaqos::sad::PortLids{agent_->lid(), agent_->sm_lid()});

    std::string path = options_.control_socket_given
                           ? options_.control_socket
                           : rdmaqos::sad::control_socket_path(agent_->ca(), agent_->port());
    if (!path.empty()) {
      auto server = rdmaqos::sad::ControlServer::open(path);
      if (server) {
        control_ = std::move(*server);
        if (options_.control_group) {
          if (auto shared = control_->share_with_group(*options_.control_group); !shared) {
            log_error(shared.error().message);
            return kExitFailure;
          }
        }
      } else if (options_.control_socket_given) {
        log_error("control socket: " + server.error().message);
        return kExitFailure;
      } else {
        log("no control socket (" + server.error().message + "): use signals");
      }
    }
    log(fmt::format("answering at {} port {} LID {}{}", agent_->ca(), agent_->port(), agent_->lid(),
                    control_ ? ", control socket " + control_->path() : ""));
    if (agent_->sm_lid() != 0 && agent_->sm_lid() != agent_->lid()) {
      // The second deployment: clients reach this SA only when pointed at it.
      log(
          fmt::format("not the SM's port (SM LID {}): clients reach this SA with sa_lid {} "
                      "(RDMA_QOS_SA_LID, --sa-lid)",
                      agent_->sm_lid(), agent_->lid()));
    }
    started_ = Clock::now();
    common::notify_ready(status());
    return 0;
  }

  int run() {
    std::thread control([this] { control_loop(); });
    // Signals go to the control thread (which polls with EINTR handled), never into the SA
    // thread's umad_recv, which libibumad would turn into an error: `systemctl reload`
    // (SIGHUP) must not stop the daemon.
    sigset_t handled;
    sigemptyset(&handled);
    for (int sig : {SIGHUP, SIGUSR1, SIGTERM, SIGINT}) sigaddset(&handled, sig);
    pthread_sigmask(SIG_BLOCK, &handled, nullptr);
    int status = 0;
    // Created with the signals blocked, which the workers inherit.
    service_.start_workers();
    while (!g_stop) {
      auto served = agent_->serve_one([this](const rdmaqos::sad::Request& r) { return respond(r); },
                                      std::chrono::milliseconds(100));
      if (!served) {
        // The device is gone: nothing more can be answered at this port.
        log_error(served.error().message);
        status = 1;
        g_stop = true;
        break;
      }
      using Kind = rdmaqos::sad::Served::Kind;
      if (served->kind == Kind::kReceiveError) service_.counters().receive_error();
      if (served->kind == Kind::kReceiveError || served->kind == Kind::kSendError) {
        mad_error(served->kind, *served->error);
      }
    }
    // Waits for the answers under way (each bounded by --answer-time-limit); drops the queued.
    service_.stop_workers();
    if (port_gone_) {
      log_error(*port_gone_);
      status = 1;
    }
    control.join();
    if (status == 0) unsubscribe_traps();
    if (child_) {
      kill(child_->pid, SIGKILL);
      child_result(*child_);
    }
    common::notify_stopping();
    log("exiting");
    return status;
  }

 private:
  // On the receiving thread: the answer to send now, or nullopt (none, or a worker's later).
  std::optional<rdmaqos::sa::SaMad> respond(const rdmaqos::sad::Request& request) {
    const auto& mad = request.mad;
    if (options_.sm_traps) {
      // The SM's answers to our subscription, and its reports: never answered as queries.
      auto trap = traps_.received(mad, request.slid, Clock::now());
      if (trap.kind != rdmaqos::sad::TrapSubscription::Received::kNotOurs) {
        if (!trap.log.empty()) log(trap.log);
        return std::move(trap.reply);
      }
    }
    if ((mad.mad.method & rdmaqos::sa::method::kResponseBit) != 0) return std::nullopt;
    if (!rdmaqos::sad::sm_key_accepted(mad, config_.sa_key)) {
      service_.counters().dropped_sm_key();
      return std::nullopt;
    }
    service_.counters().request(mad.mad.method, mad.mad.attr_id);
    const auto received = Clock::now();
    std::shared_ptr<const rdmaqos::sad::AnswerSnapshot> now = service_.current();
    // The record decoded once, for the work estimate and the answer.
    const rdmaqos::sad::DecodedQuery decoded = rdmaqos::sad::decode_query(mad);
    using Placement = rdmaqos::sad::AnswerService::Placement;
    auto placed = service_.place(
        mad, decoded, request.slid, *now,
        [&] { return service_.context(*now, request.slid, received); }, received,
        [&]() -> rdmaqos::sad::AnswerPool::Task {
          return [this, request, decoded, received, now] {
            answer_on_worker(request, decoded, received, *now);
          };
        });
    if (placed.placement == Placement::kBusy) return std::move(placed.busy);
    if (placed.placement != Placement::kHere) return std::nullopt;
    return compute(request, decoded, received, *now);
  }

  // The answer to `request` from `now` (counted); an unknown requester is remembered for the
  // control thread, which re-discovers.
  std::optional<rdmaqos::sa::SaMad> compute(const rdmaqos::sad::Request& request,
                                            const rdmaqos::sad::DecodedQuery& decoded,
                                            Clock::time_point received,
                                            const rdmaqos::sad::AnswerSnapshot& now) {
    auto computed = service_.compute(request.mad, decoded, request.slid, now, received);
    if (computed.requester_unknown)
      unknown_requester_.store(request.slid, std::memory_order_relaxed);
    return std::move(computed.answer);
  }

  // On a worker: computes the answer and sends it. The receiving thread goes on meanwhile; a
  // request that waited past its deadline is answered ERR_NO_RESOURCES without any pair.
  void answer_on_worker(const rdmaqos::sad::Request& request,
                        const rdmaqos::sad::DecodedQuery& decoded, Clock::time_point received,
                        const rdmaqos::sad::AnswerSnapshot& now) {
    std::optional<rdmaqos::sa::SaMad> answer;
    try {
      answer = compute(request, decoded, received, now);
    } catch (const std::exception& e) {
      log_error(fmt::format("answering LID {} on a worker: {}", request.slid, e.what()));
      return;
    }
    if (!answer) return;
    auto sent = agent_->send(request, std::move(*answer));
    if (!sent) {
      // The device is gone: the receiving thread stops (at its next poll) with this message.
      std::lock_guard lock(mad_error_mutex_);
      if (!port_gone_) port_gone_ = sent.error().message;
      g_stop = true;
      return;
    }
    if (sent->kind == rdmaqos::sad::Served::Kind::kSendError) mad_error(sent->kind, *sent->error);
  }

  // A MAD the port failed, from either thread: counted and logged (rate-limited).
  void mad_error(rdmaqos::sad::Served::Kind kind, const rdmaqos::Error& what) {
    if (kind == rdmaqos::sad::Served::Kind::kSendError) service_.counters().send_error();
    std::lock_guard lock(mad_error_mutex_);
    mad_error_log_.failed(what.message, Clock::now());
  }

  void install(rdmaqos::sad::AnswerState state) { service_.install(std::move(state)); }

  void control_loop() {
    while (!g_stop) {
      // Cleared as read: a signal arriving in between is kept for the next turn.
      if (g_reload.exchange(false)) reload();
      if (g_rediscover.exchange(false)) start_rediscovery(std::nullopt);
      if (options_.sm_traps) serve_traps();
      // Automatic re-discoveries only where the period is on (0: only on request).
      if (options_.rediscover_interval.count() > 0) {
        if (Clock::now() >= next_discovery_) start_rediscovery(std::nullopt);
        if (Clock::now() >= next_lid_check_) {
          next_lid_check_ = Clock::now() + kLidCheckInterval;
          check_lids();
        }
        check_unknown_requester();
      }
      if (child_ && Clock::now() - child_->last_output > options_.discovery_timeout) {
        kill(child_->pid, SIGKILL);
      }
      std::vector<pollfd> fds;
      if (child_) fds.push_back({child_->fd, POLLIN, 0});
      size_t control_at = fds.size();
      if (control_) control_->add_poll_fds(fds);
      int rc = poll(fds.data(), fds.size(), 200);
      if (rc < 0 && errno != EINTR) {
        log_error(fmt::format("poll: {}", std::strerror(errno)));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      if (rc <= 0) continue;
      if (child_ && fds[0].revents != 0) read_child();
      if (control_) {
        auto control_fds = std::span<const pollfd>(fds).subspan(control_at);
        for (auto& request : control_->process(control_fds)) handle(request);
      }
    }
  }

  // What is being served, for systemd's STATUS= (`systemctl status`).
  std::string status() const {
    std::shared_ptr<const rdmaqos::sad::AnswerSnapshot> now = service_.current();
    std::string policy = config_.no_policy
                             ? std::string("no policy (partition SLs)")
                             : fmt::format("policy {} ({} rules)", config_.policy_path,
                                           now->policy ? now->policy->rules().size() : 0);
    return fmt::format("answering at {} port {} LID {}: {}, {} endpoints{}", agent_->ca(),
                       agent_->port(), trigger_->known().lid, policy,
                       now->model->endpoints().size(),
                       last_reload_failed_ ? "; the last reload failed" : "");
  }

  nlohmann::json reload() {
    common::notify_reloading();
    rdmaqos::sad::StateLoad r = load(config_, service_.current()->model);
    for (const auto& d : r.diagnostics) log_diagnostic(d);
    nlohmann::json reply = {{"ok", r.state.has_value()}, {"diagnostics", r.diagnostics}};
    if (r.state) {
      install(std::move(*r.state));
      ++reloads_;
      last_reload_ = std::chrono::system_clock::now();
      reply["message"] = "policy reloaded";
    } else {
      ++reload_failures_;
      reply["message"] = "policy reload failed: the previous policy stays in force";
    }
    last_reload_failed_ = !r.state;
    if (r.state)
      log(reply["message"].get<std::string>());
    else
      log_error(reply["message"].get<std::string>());
    common::notify_ready(status());
    return reply;
  }

  // A re-discovery: incremental against the model in force, unless `full` is asked for, the
  // daemon runs with --full-rediscover-every 1, this is the Nth since the last full one, or
  // there is no complete model to start from. A request while one runs joins it; a request for
  // a full one while an incremental one runs waits for a full one after it.
  void start_rediscovery(std::optional<int> connection, bool full = false) {
    next_discovery_ = Clock::now() + options_.rediscover_interval;
    if (child_) {
      if (full && !child_->full) {
        full_pending_ = true;
        if (connection) waiting_full_.push_back(*connection);
      } else if (connection) {
        waiting_.push_back(*connection);
      }
      return;
    }
    if (connection) waiting_.push_back(*connection);
    const unsigned every = options_.full_rediscovery_every;
    const bool periodic_full = every > 0 && incremental_since_full_ + 1 >= every;
    const bool incremental = !full && !periodic_full && !model_json_.empty();
    child_ = spawn_discovery(discovery_, incremental ? &model_json_ : nullptr);
    // Without a memfd for the model in force, a full one.
    if (!child_ && incremental) child_ = spawn_discovery(discovery_, nullptr);
    if (!child_) finish_rediscovery(std::nullopt, "cannot start the discovery process", {});
  }

  void read_child() {
    char buf[65536];
    for (;;) {
      ssize_t n = read(child_->fd, buf, sizeof(buf));
      if (n > 0) {
        child_->output.append(buf, static_cast<size_t>(n));
        child_->last_output = Clock::now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      break;  // EOF or error: the child is done
    }
    std::string json;
    auto found = child_result(*child_, &json);
    finish_rediscovery(std::move(found), "discovery failed (child process)", std::move(json));
  }

  // `json`: the model's JSON line, kept as the start of the next incremental re-discovery.
  void finish_rediscovery(std::optional<Discovery> found, const std::string& failure,
                          std::string json) {
    // Whether it was a full one: counted by what the child printed (an incremental one that
    // fell back said so).
    const bool full = !child_ || child_->full ||
                      child_->output.find(": a full discovery instead") != std::string::npos;
    child_.reset();
    nlohmann::json reply = {{"ok", false}, {"diagnostics", nlohmann::json::array()}};
    if (!found) {
      reply["message"] = failure + ": the previous model stays in force";
    } else {
      for (const auto& w : found->missing) reply["diagnostics"].push_back("discovery: " + w);
      for (const auto& w : found->warnings) log_error("re-discovery: " + w);
      size_t endpoints = found->model.endpoints().size();
      if (auto refused = rdmaqos::sad::replacement_refused(*found)) {
        // A model missing PKey or SL2VL tables would answer paths the fabric forbids.
        reply["message"] =
            "re-discovery " + refused->message + ": the previous model stays in force";
      } else {
        rdmaqos::sad::StateLoad r = load(config_, model_of(*found, config_));
        for (const auto& d : r.diagnostics) reply["diagnostics"].push_back(d);
        if (r.state) {
          install(std::move(*r.state));
          reply["ok"] = true;
          reply["message"] = fmt::format("fabric re-discovered: {} endpoints ({})", endpoints,
                                         full ? "full" : "incremental");
          last_discovery_ = std::chrono::system_clock::now();
          model_json_ = std::move(json);
          last_full_ = full;
          incremental_since_full_ = full ? 0 : incremental_since_full_ + 1;
          if (!full) ++incremental_discoveries_;
        } else {
          reply["message"] =
              "the policy or partitions have errors on the new fabric: the previous model "
              "stays in force";
        }
      }
    }
    ++(reply["ok"].get<bool>() ? discoveries_ : discovery_failures_);
    for (const auto& d : reply["diagnostics"]) log_diagnostic(d.get<std::string>());
    log(reply["message"].get<std::string>());
    common::notify_status(status());
    for (int c : waiting_) control_->reply(c, reply);
    waiting_.clear();
    if (full_pending_) {
      // A full one was asked for while an incremental one ran.
      full_pending_ = false;
      std::vector<int> next = std::move(waiting_full_);
      waiting_full_.clear();
      start_rediscovery(std::nullopt, true);
      if (child_) {
        waiting_.insert(waiting_.end(), next.begin(), next.end());
      } else {
        for (int c : next) control_->reply(c, reply);
      }
    }
  }

  // A re-discovery as soon as the port's LID or its SM's has moved and settled, instead of at
  // the next period: the model would name ports at LIDs they no longer have until then.
  void check_lids() {
    const rdmaqos::sad::PortLids before = trigger_->known();
    if (!trigger_->port_read(rdmaqos::sad::read_port_lids(agent_->ca(), agent_->port()))) return;
    const rdmaqos::sad::PortLids& after = trigger_->known();
    log(fmt::format("the port's LID moved from {} to {}, its SM's from {} to {}: re-discovering",
                    before.lid, after.lid, before.sm_lid, after.sm_lid));
    start_rediscovery(std::nullopt);
  }

  // The SM's traps: the subscription's Sets when due, and a re-discovery when its reports ask
  // for one. One that comes while a re-discovery runs waits for it to end: the running one may
  // have passed the change.
  void serve_traps() {
    const auto now = Clock::now();
    std::string line;
    const rdmaqos::sad::PortLids lids = trigger_->known();
    for (auto& set : traps_.due(now, lids.sm_lid, lids.lid, &line)) {
      auto sent = agent_->send_request({lids.sm_lid, rdmaqos::sa::kSaQp, agent_->sm_sl(), 0},
                                       std::move(set), kSetResponseTimeout);
      // The device gone: the SA thread stops at its next receive.
      if (sent && sent->kind == rdmaqos::sad::Served::Kind::kSendError)
        mad_error(sent->kind, *sent->error);
    }
    if (!line.empty()) logger().warning(line);
    std::string why;
    if (!child_ && traps_.rediscovery_due(now, &why)) {
      log(why + ": re-discovering");
      start_rediscovery(std::nullopt);
    }
  }

  // At exit: the SM stops sending reports here. Its answers are waited for a moment (the port
  // is still served), so the SM does not find their requester gone.
  void unsubscribe_traps() {
    if (!options_.sm_traps) return;
    uint16_t sm_lid = 0;
    for (auto& set : traps_.unsubscribe(&sm_lid)) {
      auto sent = agent_->send_request({sm_lid, rdmaqos::sa::kSaQp, agent_->sm_sl(), 0},
                                       std::move(set), kSetResponseTimeout);
      if (!sent) return;
    }
    const auto until = Clock::now() + kUnsubscribeWait;
    while (traps_.waiting() && Clock::now() < until) {
      auto served = agent_->serve_one([this](const rdmaqos::sad::Request& r) { return respond(r); },
                                      std::chrono::milliseconds(50));
      if (!served) return;
    }
  }

  // A host that came up since the last discovery gets no paths until the model has it: a
  // dropped query re-discovers (RediscoveryTrigger paces it).
  void check_unknown_requester() {
    uint16_t lid = unknown_requester_.exchange(0, std::memory_order_relaxed);
    if (lid == 0 || !trigger_->unknown_requester(Clock::now())) return;
    log(
        fmt::format("a path query from LID {}, which the fabric model does not know, was dropped: "
                    "re-discovering",
                    lid));
    start_rediscovery(std::nullopt);
  }

  nlohmann::json stats() const {
    const rdmaqos::sad::CounterSnapshot counts = service_.counters().snapshot();
    nlohmann::json j = rdmaqos::sad::to_json(counts);
    j["dropped"]["undecodable"] = agent_->undecodable();
    std::shared_ptr<const rdmaqos::sad::AnswerSnapshot> now = service_.current();
    const auto& pf = now->policy;
    const auto uptime =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count();
    j["sa"] = {{"pid", getpid()},
               {"ca", agent_->ca()},
               {"port", agent_->port()},
               {"lid", trigger_->known().lid},
               {"sm_lid", trigger_->known().sm_lid},
               {"uptime_seconds", uptime}};
    j["policy"] = {
        {"file", config_.no_policy ? nlohmann::json(nullptr) : nlohmann::json(config_.policy_path)},
        {"rules", pf ? pf->rules().size() : 0},
        {"reloads", reloads_},
        {"reload_failures", reload_failures_},
        {"last_reload", reloads_ ? nlohmann::json(iso_time(last_reload_)) : nullptr}};
    j["fabric"] = {{"endpoints", now->model->endpoints().size()},
                   {"discoveries", discoveries_},
                   {"discovery_failures", discovery_failures_},
                   {"last_discovery", iso_time(last_discovery_)},
                   {"discovering", child_.has_value()},
                   {"incremental_discoveries", incremental_discoveries_},
                   {"last_discovery_full", last_full_},
                   {"full_rediscover_every", options_.full_rediscovery_every},
                   {"rediscover_interval_seconds", options_.rediscover_interval.count()}};
    j["sm_traps"] = options_.sm_traps ? rdmaqos::sad::to_json(traps_.status())
                                      : nlohmann::json{{"enabled", false}};
    rdmaqos::sad::SadFigures figures;
    figures.ca = agent_->ca();
    figures.port = agent_->port();
    figures.lid = trigger_->known().lid;
    figures.uptime_seconds = static_cast<double>(uptime);
    figures.undecodable = agent_->undecodable();
    figures.policy_rules = pf ? pf->rules().size() : 0;
    figures.reloads = reloads_;
    figures.reload_failures = reload_failures_;
    figures.fabric_endpoints = now->model->endpoints().size();
    figures.discoveries = discoveries_;
    figures.discovery_failures = discovery_failures_;
    if (options_.sm_traps) {
      const auto t = traps_.status();
      figures.traps_subscribed = t.subscribed.size();
      figures.trap_reports = t.reports;
    }
    j["metrics"] = rdmaqos::common::metrics::to_json(rdmaqos::sad::sad_metrics(counts, figures));
    return j;
  }

  // What the SA in force answers to one query and why (the answer, the rule, each LID
  // combination's reason for no record), computed on the control thread over the same
  // snapshot the SA thread answers from; read-only, so the stats group may ask.
  nlohmann::json explain(const nlohmann::json& body) const {
    auto parsed = rdmaqos::sad::parse_explain_request(body);
    if (!parsed) return {{"ok", false}, {"message", parsed.error().message}};
    return {{"ok", true},
            {"explain", service_.explain(*service_.current(), *parsed, config_.policy_path)}};
  }

  void handle(const rdmaqos::sad::ControlServer::Request& request) {
    using rdmaqos::sad::ControlAction;
    auto command = rdmaqos::sad::read_control_command(request.body);
    if (!command) {
      control_->reply(request.connection, {{"ok", false}, {"message", command.error().message}});
    } else if (auto refused = rdmaqos::sad::refusal_for_peer(
                   request.connection, *command, request.body["command"].get<std::string>())) {
      control_->reply(request.connection, *refused);
    } else if (command->action == ControlAction::kReload) {
      control_->reply(request.connection, reload());
    } else if (command->action == ControlAction::kRediscover) {
      start_rediscovery(request.connection, command->full);
    } else if (command->action == ControlAction::kStats) {
      control_->reply(request.connection, {{"ok", true}, {"stats", stats()}});
    } else if (command->action == ControlAction::kPause ||
               command->action == ControlAction::kResume) {
      control_->reply(request.connection,
                      {{"ok", false},
                       {"message",
                        "pause and resume are the OpenSM plugin's: rdma-qos-sad has "
                        "no other SA to leave the queries to"}});
    } else {
      control_->reply(request.connection, explain(request.body));
    }
  }

  const Config config_;
  const rdmaqos::sad::DiscoveryOptions discovery_;
  const DaemonOptions options_;
  // The state in force, its counters and the answer workers (run() starts and stops them).
  rdmaqos::sad::AnswerService service_;
  // The LID of the last path query dropped for an unknown requester (0: none since the control
  // thread looked): set by the SA thread, taken by the control thread.
  std::atomic<uint16_t> unknown_requester_{0};
  std::unique_ptr<rdmaqos::sad::SaAgent> agent_;
  std::mutex mad_error_mutex_;  // guards the two below: the receiving thread and the workers
  MadErrorLog mad_error_log_;
  std::optional<std::string> port_gone_;  // a worker's send found the device gone
  // The SM's traps (options_.sm_traps): Sets from the control thread, answers and reports on
  // the receiving thread; it locks itself.
  rdmaqos::sad::TrapSubscription traps_;
  // The rest belongs to the control thread (after start()).
  std::unique_ptr<rdmaqos::sad::ControlServer> control_;
  std::optional<ChildDiscovery> child_;
  std::vector<int> waiting_;  // control connections waiting for the discovery under way
  // A full re-discovery asked for while an incremental one ran, and who waits for it.
  bool full_pending_ = false;
  std::vector<int> waiting_full_;
  // The JSON line of the model in force (empty: none complete), and the incremental
  // re-discoveries since the last full one.
  std::string model_json_;
  unsigned incremental_since_full_ = 0;
  uint64_t incremental_discoveries_ = 0;
  bool last_full_ = true;
  Clock::time_point started_, next_discovery_, next_lid_check_;
  // Re-discoveries before the period is up (set in start(), with the port's LIDs then).
  std::optional<rdmaqos::sad::RediscoveryTrigger> trigger_;
  std::chrono::system_clock::time_point last_discovery_, last_reload_;
  bool last_reload_failed_ = false;
  uint64_t reloads_ = 0, reload_failures_ = 0, discoveries_ = 0, discovery_failures_ = 0;
};

Daemon::Daemon(Config config, DiscoveryOptions discovery, DaemonOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(discovery), options)) {}
Daemon::~Daemon() = default;
int Daemon::start() {
  return impl_->start();
}
int Daemon::run() {
  return impl_->run();
}

}  // namespace rdmaqos::sad
