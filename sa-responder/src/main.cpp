// rdma-qos-sad: the policy-enforcing SA responder. Discovers the fabric, loads the policy and
// answers PathRecord / MultiPathRecord / ClassPortInfo queries at its port. Operated through
// signals (SIGHUP reloads, SIGUSR1 re-discovers) and a control socket (`rdma-qos sad`), which
// also reports the result of a reload and the counters.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <span>
#include <sstream>
#include <thread>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/counters.h"
#include "rdma-qos/sa-responder/discovery.h"
#include "rdma-qos/sa-responder/discovery_json.h"

namespace {

using rdmaqos::sad::Discovery;
using rdmaqos::sad::discovery_from_json;
using rdmaqos::sad::Endpoint;
using rdmaqos::sad::fabric_json;
using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_reload = 0;
volatile sig_atomic_t g_rediscover = 0;
volatile sig_atomic_t g_stop = 0;

void on_signal(int sig) {
  if (sig == SIGHUP) g_reload = 1;
  if (sig == SIGUSR1) g_rediscover = 1;
  if (sig == SIGTERM || sig == SIGINT) g_stop = 1;
}

// No SA_RESTART: a signal interrupts poll() so it is handled at once.
void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGHUP, SIGUSR1, SIGTERM, SIGINT}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// stderr in the foreground, syslog (the journal) in the background or with --syslog.
struct Logger {
  bool to_stderr = true;
  bool to_syslog = false;
  void operator()(int priority, const std::string& line) const {
    if (to_stderr) std::cerr << "rdma-qos-sad: " << line << std::endl;
    if (to_syslog) syslog(priority, "%s", line.c_str());
  }
};
Logger g_log;

void log(const std::string& line) {
  g_log(LOG_INFO, line);
}
void log_error(const std::string& line) {
  g_log(LOG_ERR, line);
}

// What the answers are computed from; replaced as a whole on reload or re-discovery.
struct State {
  std::shared_ptr<const rdmaqos::sad::FabricModel> model;
  std::shared_ptr<const rdmaqos::policy::Fabric> policy_fabric;  // with the partitions
  std::shared_ptr<const rdmaqos::policy::CompiledPolicy> policy;
  // The IPoIB broadcast groups OpenSM creates for the partitions (multicast DGIDs).
  std::shared_ptr<const std::vector<rdmaqos::sad::MulticastGroup>> groups;
};

struct Config {
  std::string policy_path, partitions_path, opensm_conf_path;
  bool no_policy = false;
  int subnet_timeout = 18;
  uint64_t sa_key = rdmaqos::sad::kDefaultSaKey;
  std::optional<rdmaqos::policy::QosConfig> qos;  // from --opensm-conf
};

struct LoadResult {
  std::optional<State> state;            // nullopt: errors, the old state stays
  std::vector<std::string> diagnostics;  // every error and warning, with file and line
};

// Partitions and policy against `model`; diagnostics of both files, in order.
LoadResult load(const Config& config, std::shared_ptr<const rdmaqos::sad::FabricModel> model) {
  namespace pol = rdmaqos::policy;
  LoadResult out;
  auto fabric = std::make_shared<pol::Fabric>(model->policy_fabric());
  bool ok = true;
  if (config.partitions_path.empty()) {
    fabric->partitions = pol::default_partitions(*fabric);
  } else if (auto text = read_file(config.partitions_path); !text) {
    out.diagnostics.push_back(fmt::format("{}: cannot read the file", config.partitions_path));
    ok = false;
  } else {
    auto r = pol::parse_partitions(*text, *fabric);
    for (const auto& d : r.diagnostics)
      out.diagnostics.push_back(pol::format_diagnostic(d, config.partitions_path));
    if (pol::has_errors(r.diagnostics)) ok = false;
    fabric->partitions = std::move(r.partitions);
  }
  std::shared_ptr<const pol::CompiledPolicy> policy;
  if (!config.no_policy) {
    if (auto text = read_file(config.policy_path); !text) {
      out.diagnostics.push_back(fmt::format("{}: cannot read the file", config.policy_path));
      ok = false;
    } else {
      auto r = pol::load_policy(*text, fabric.get());
      for (const auto& d : r.diagnostics)
        out.diagnostics.push_back(pol::format_diagnostic(d, config.policy_path));
      if (!r.policy) ok = false;
      policy = r.policy;
      if (policy && config.qos) {
        for (const auto& d : pol::check_level_sls(policy->policy(), *config.qos))
          out.diagnostics.push_back(pol::format_diagnostic(d, config.policy_path));
      }
    }
  }
  auto groups = std::make_shared<const std::vector<rdmaqos::sad::MulticastGroup>>(
      rdmaqos::sad::ipoib_broadcast_groups(fabric->partitions,
                                           static_cast<uint8_t>(config.subnet_timeout)));
  if (ok) {
    out.state = State{std::move(model), std::move(fabric), std::move(policy), std::move(groups)};
  }
  return out;
}

// The model discovery found, with the configured packet life.
std::shared_ptr<const rdmaqos::sad::FabricModel> model_of(Discovery& d, const Config& config) {
  d.model.subnet_timeout = static_cast<uint8_t>(config.subnet_timeout);
  return std::make_shared<const rdmaqos::sad::FabricModel>(std::move(d.model));
}

// A re-discovery in a child process (this program with --dump-fabric): while the SA port is
// open, SMP answers do not reach an in-process discovery under umad2sim. Its output is read as
// it comes, so the SA keeps answering meanwhile.
struct ChildDiscovery {
  pid_t pid = -1;
  int fd = -1;
  std::string output;
  Clock::time_point last_output;  // the start, then each output: the time limit counts from it
};

std::optional<ChildDiscovery> spawn_discovery(const rdmaqos::sad::DiscoveryOptions& options) {
  std::vector<std::string> args = {"/proc/self/exe", "--dump-fabric", "--json"};
  if (!options.ca.empty()) args.insert(args.end(), {"--ca", options.ca});
  if (options.port != 0) args.insert(args.end(), {"--port", std::to_string(options.port)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return ChildDiscovery{pid, fds[0], {}, Clock::now()};
}

// The discovery a finished child printed; nullopt when it failed or printed no model.
std::optional<Discovery> child_result(ChildDiscovery& child) {
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  // The JSON line: umad2sim may print lines of its own.
  std::istringstream lines(child.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) return discovery_from_json(j);
  }
  return std::nullopt;
}

struct DaemonOptions {
  std::chrono::seconds rediscover_interval{300};
  std::chrono::seconds discovery_timeout{300};
  std::string control_socket;  // empty: the default path for the port
  bool control_socket_given = false;
  bool issm = true;
  rdmaqos::sad::RmppMode rmpp = rdmaqos::sad::RmppMode::kAuto;
};

std::string iso_time(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The answering state with the counters' view of its policy: swapped as one pointer.
struct Snapshot {
  State state;
  std::shared_ptr<const rdmaqos::sad::SaCounters::LevelBinding> levels;
};

// Two threads: the main thread answers MADs (umad2sim's poll does not mix its descriptors with
// real ones, so the SA port is served on its own); the control thread serves the control
// socket, signals, the re-discovery child and its period, and swaps in new snapshots. A reload
// never stalls answering: the answer path only loads the current snapshot.
class Daemon {
 public:
  Daemon(Config config, rdmaqos::sad::DiscoveryOptions discovery, DaemonOptions options)
      : config_(std::move(config)), discovery_(std::move(discovery)), options_(options) {}

  // Discovery, policy, SA port and control socket; false (logged) when the daemon cannot run.
  bool start() {
    rdmaqos::sad::DiscoveryOptions first = discovery_;
    first.progress = [](const std::string& s) { log("discovery: " + s); };
    auto found = rdmaqos::sad::discover_fabric(first);
    if (!found) {
      log_error("discovery failed: " + found.error().message);
      return false;
    }
    // With no model yet, an incomplete one is all there is: answer from it, say so, and let the
    // next complete re-discovery replace it.
    for (const auto& w : found->missing) log("discovery: " + w);
    for (const auto& w : found->warnings) log_error("discovery: " + w);
    if (auto why = rdmaqos::sad::replacement_refused(*found)) {
      log("discovery " + *why + ": answering from it until a complete re-discovery");
    }
    LoadResult loaded = load(config_, model_of(*found, config_));
    for (const auto& d : loaded.diagnostics) log(d);
    if (!loaded.state) {
      log_error("the policy or partitions have errors: not starting");
      return false;
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
      return false;
    }
    agent_ = std::move(*agent);

    std::string path = options_.control_socket_given
                           ? options_.control_socket
                           : rdmaqos::sad::control_socket_path(agent_->ca(), agent_->port());
    if (!path.empty()) {
      auto server = rdmaqos::sad::ControlServer::open(path);
      if (server) {
        control_ = std::move(*server);
      } else if (options_.control_socket_given) {
        log_error("control socket: " + server.error().message);
        return false;
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
    return true;
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
    while (!g_stop) {
      auto served = agent_->serve_one([this](const rdmaqos::sad::Request& r) { return respond(r); },
                                      std::chrono::milliseconds(100));
      if (!served) {
        log_error(served.error().message);
        status = 1;
        g_stop = 1;
      }
    }
    control.join();
    if (child_) {
      kill(child_->pid, SIGKILL);
      child_result(*child_);
    }
    log("exiting");
    return status;
  }

 private:
  std::optional<rdmaqos::sa::SaMad> respond(const rdmaqos::sad::Request& request) {
    const auto& mad = request.mad;
    if ((mad.mad.method & rdmaqos::sa::method::kResponseBit) != 0) return std::nullopt;
    if (!rdmaqos::sad::sm_key_accepted(mad, config_.sa_key)) {
      counters_.dropped_sm_key();
      return std::nullopt;
    }
    counters_.request(mad.mad.method, mad.mad.attr_id);
    std::shared_ptr<const Snapshot> now = current_.load();
    rdmaqos::sad::CountingObserver observer(counters_, *now->levels);
    rdmaqos::sad::AnswerContext ctx;
    ctx.fabric = now->state.model.get();
    ctx.policy = now->state.policy.get();
    ctx.partitions = &now->state.policy_fabric->partitions;
    ctx.requester = now->state.model->by_lid(request.slid);
    ctx.sa_key = config_.sa_key;
    ctx.groups = now->state.groups.get();
    ctx.observer = &observer;
    auto answer = rdmaqos::sad::answer(ctx, mad);
    if (answer) counters_.response(answer->mad.status);
    return answer;
  }

  void install(State state) {
    auto levels = counters_.bind_policy(state.policy.get());
    current_.store(std::make_shared<const Snapshot>(Snapshot{std::move(state), std::move(levels)}));
  }

  void control_loop() {
    while (!g_stop) {
      if (g_reload) {
        g_reload = 0;
        reload();
      }
      if (g_rediscover) {
        g_rediscover = 0;
        start_rediscovery(std::nullopt);
      }
      if (options_.rediscover_interval.count() > 0 && Clock::now() >= next_discovery_) {
        start_rediscovery(std::nullopt);
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

  nlohmann::json reload() {
    LoadResult r = load(config_, current_.load()->state.model);
    for (const auto& d : r.diagnostics) log(d);
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
    log(reply["message"].get<std::string>());
    return reply;
  }

  void start_rediscovery(std::optional<int> connection) {
    if (connection) waiting_.push_back(*connection);
    next_discovery_ = Clock::now() + options_.rediscover_interval;
    if (child_) return;  // joins the discovery under way
    child_ = spawn_discovery(discovery_);
    if (!child_) finish_rediscovery(std::nullopt, "cannot start the discovery process");
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
    auto found = child_result(*child_);
    child_.reset();
    finish_rediscovery(std::move(found), "discovery failed (child process)");
  }

  void finish_rediscovery(std::optional<Discovery> found, const std::string& failure) {
    nlohmann::json reply = {{"ok", false}, {"diagnostics", nlohmann::json::array()}};
    if (!found) {
      reply["message"] = failure + ": the previous model stays in force";
    } else {
      for (const auto& w : found->missing) reply["diagnostics"].push_back("discovery: " + w);
      for (const auto& w : found->warnings) log_error("re-discovery: " + w);
      size_t endpoints = found->model.endpoints().size();
      if (auto refused = rdmaqos::sad::replacement_refused(*found)) {
        // A model missing PKey or SL2VL tables would answer paths the fabric forbids.
        reply["message"] = "re-discovery " + *refused + ": the previous model stays in force";
      } else {
        LoadResult r = load(config_, model_of(*found, config_));
        for (const auto& d : r.diagnostics) reply["diagnostics"].push_back(d);
        if (r.state) {
          install(std::move(*r.state));
          reply["ok"] = true;
          reply["message"] = fmt::format("fabric re-discovered: {} endpoints", endpoints);
          last_discovery_ = std::chrono::system_clock::now();
        } else {
          reply["message"] =
              "the policy or partitions have errors on the new fabric: the previous model "
              "stays in force";
        }
      }
    }
    ++(reply["ok"].get<bool>() ? discoveries_ : discovery_failures_);
    for (const auto& d : reply["diagnostics"]) log(d.get<std::string>());
    log(reply["message"].get<std::string>());
    for (int c : waiting_) control_->reply(c, reply);
    waiting_.clear();
  }

  nlohmann::json stats() const {
    nlohmann::json j = rdmaqos::sad::to_json(counters_.snapshot());
    j["dropped"]["undecodable"] = agent_->undecodable();
    std::shared_ptr<const Snapshot> now = current_.load();
    const auto& pf = now->state.policy;
    j["sa"] = {{"pid", getpid()},
               {"ca", agent_->ca()},
               {"port", agent_->port()},
               {"lid", agent_->lid()},
               {"uptime_seconds",
                std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count()}};
    j["policy"] = {
        {"file", config_.no_policy ? nlohmann::json(nullptr) : nlohmann::json(config_.policy_path)},
        {"rules", pf ? pf->rules().size() : 0},
        {"reloads", reloads_},
        {"reload_failures", reload_failures_},
        {"last_reload", reloads_ ? nlohmann::json(iso_time(last_reload_)) : nullptr}};
    j["fabric"] = {{"endpoints", now->state.model->endpoints().size()},
                   {"discoveries", discoveries_},
                   {"discovery_failures", discovery_failures_},
                   {"last_discovery", iso_time(last_discovery_)},
                   {"discovering", child_.has_value()},
                   {"rediscover_interval_seconds", options_.rediscover_interval.count()}};
    return j;
  }

  void handle(const rdmaqos::sad::ControlServer::Request& request) {
    const std::string command = request.body["command"].get<std::string>();
    if (command == "reload") {
      control_->reply(request.connection, reload());
    } else if (command == "rediscover") {
      start_rediscovery(request.connection);
    } else if (command == "stats") {
      control_->reply(request.connection, {{"ok", true}, {"stats", stats()}});
    } else {
      control_->reply(
          request.connection,
          {{"ok", false},
           {"message", fmt::format("unknown command '{}' (reload, rediscover, stats)", command)}});
    }
  }

  const Config config_;
  const rdmaqos::sad::DiscoveryOptions discovery_;
  const DaemonOptions options_;
  rdmaqos::sad::SaCounters counters_;
  std::atomic<std::shared_ptr<const Snapshot>> current_;
  std::unique_ptr<rdmaqos::sad::SaAgent> agent_;
  // The rest belongs to the control thread (after start()).
  std::unique_ptr<rdmaqos::sad::ControlServer> control_;
  std::optional<ChildDiscovery> child_;
  std::vector<int> waiting_;  // control connections waiting for the discovery under way
  Clock::time_point started_, next_discovery_;
  std::chrono::system_clock::time_point last_discovery_, last_reload_;
  uint64_t reloads_ = 0, reload_failures_ = 0, discoveries_ = 0, discovery_failures_ = 0;
};

// Reads --opensm-conf: its values are defaults the command line overrides.
bool apply_opensm_conf(Config& config, bool subnet_timeout_given, bool sa_key_given) {
  namespace pol = rdmaqos::policy;
  auto text = read_file(config.opensm_conf_path);
  if (!text) {
    log_error(fmt::format("{}: cannot read the file", config.opensm_conf_path));
    return false;
  }
  pol::OpenSmConfResult r = pol::parse_opensm_conf(*text);
  for (const auto& d : r.diagnostics) log(pol::format_diagnostic(d, config.opensm_conf_path));
  if (pol::has_errors(r.diagnostics)) return false;
  config.qos = r.config;
  if (!r.config.qos) {
    log(
        fmt::format("{}: qos is not TRUE: OpenSM would apply no policy; rdma-qos-sad applies "
                    "the one it is given",
                    config.opensm_conf_path));
  }
  if (config.policy_path.empty() && !config.no_policy && r.sm.qos_policy_file)
    config.policy_path = *r.sm.qos_policy_file;
  if (config.partitions_path.empty() && r.sm.partition_config_file &&
      access(r.sm.partition_config_file->c_str(), F_OK) == 0)
    config.partitions_path = *r.sm.partition_config_file;
  if (!subnet_timeout_given && r.sm.subnet_timeout) config.subnet_timeout = *r.sm.subnet_timeout;
  if (!sa_key_given && r.sm.sa_key) config.sa_key = *r.sm.sa_key;
  return true;
}

// Forks; the parent waits until the child is ready (exit 0) or failed (exit 1), so a failed
// start still shows in the exit status. Returns the write end the child signals readiness on.
int daemonize() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    close(fds[1]);
    char c = 0;
    ssize_t n;
    while ((n = read(fds[0], &c, 1)) < 0 && errno == EINTR) {
    }
    _exit(n == 1 && c == 'R' ? 0 : 1);
  }
  close(fds[0]);
  setsid();
  if (chdir("/") != 0) {
  }
  return fds[1];
}

void detach_stdio() {
  int null = open("/dev/null", O_RDWR);
  if (null < 0) return;
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(null, fd);
  if (null > STDERR_FILENO) close(null);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdma-qos-sad: a policy-enforcing SA PathRecord responder"};
  rdmaqos::sad::DiscoveryOptions discovery;
  DaemonOptions options;
  bool dump_fabric = false;
  bool json = false;
  bool foreground = false;
  bool detach = false;
  bool use_syslog = false;
  bool no_issm = false;
  int rediscover_interval = 300;
  std::string sa_key_text;
  Config config;
  app.add_option("--policy", config.policy_path, "QoS policy (OpenSM qos-policy.conf syntax)")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-policy", config.no_policy,
               "run without a policy: partition SLs apply, as OpenSM without one");
  app.add_option("--partitions", config.partitions_path, "partitions (OpenSM partitions.conf)")
      ->check(CLI::ExistingFile);
  app.add_option("--opensm-conf", config.opensm_conf_path,
                 "opensm.conf: qos_policy_file, partition_config_file, subnet_timeout, sa_key "
                 "and the qos_* SL2VL defaults (the command line wins)")
      ->check(CLI::ExistingFile);
  auto* timeout_opt = app.add_option("--subnet-timeout", config.subnet_timeout,
                                     "packet life without a level value (OpenSM's subnet_timeout)")
                          ->check(CLI::Range(0, 31));
  auto* sa_key_opt = app.add_option(
      "--sa-key", sa_key_text,
      "SM_Key of trusted requests (OpenSM's sa_key, default 1); other non-zero keys get no answer");
  // Like other daemons, it detaches unless told --foreground (what the systemd unit, a
  // Type=simple service, and the test beds say: they supervise the process they started).
  auto* foreground_opt =
      app.add_flag("--foreground", foreground, "stay in the foreground, logging to stderr");
  app.add_flag("--daemon", detach,
               "detach (the default without --foreground): fork, log to syslog, return once "
               "answering")
      ->excludes(foreground_opt);
  app.add_flag("--syslog", use_syslog, "also log to syslog in the foreground");
  app.add_option("--rediscover-interval", rediscover_interval,
                 "seconds between re-discoveries of the fabric (0: only on request)")
      ->check(CLI::Range(0, 86400 * 365));
  app.add_option("--control-socket", options.control_socket,
                 "control socket (default /run/rdma-qos/sad-<ca>-<port>.sock; '' for none)");
  app.add_flag("--no-issm", no_issm, "do not hold the port's issm device");
  std::string rmpp_mode = "auto";
  app.add_option("--rmpp", rmpp_mode,
                 "multi-MAD table answers (RMPP): auto (off under umad2sim), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--ca", discovery.ca,
                 "CA to run at (default: the first); CA:PORT also sets the port (systemd's "
                 "instance name)");
  app.add_option("--port", discovery.port, "port of the CA (default: the first active)");
  app.add_flag("--dump-fabric", dump_fabric, "discover the fabric, print the model and exit");
  app.add_flag("--json", json, "print JSON");
  CLI11_PARSE(app, argc, argv);

  if (auto colon = discovery.ca.find(':'); colon != std::string::npos) {
    try {
      discovery.port = std::stoi(discovery.ca.substr(colon + 1));
    } catch (const std::exception&) {
      std::cerr << "rdma-qos-sad: --ca '" << discovery.ca << "' is not CA or CA:PORT\n";
      return 2;
    }
    discovery.ca.resize(colon);
  }
  if (dump_fabric) {
    // Progress lines before the JSON line: the daemon logs them, and its time limit counts
    // from the last one (a discovery that advances is never killed half-way).
    discovery.progress = [](const std::string& s) { std::cout << "discovery: " << s << std::endl; };
    auto result = rdmaqos::sad::discover_fabric(discovery);
    if (!result) {
      std::cerr << "rdma-qos-sad: discovery failed: " << result.error().message << "\n";
      return 1;
    }
    nlohmann::json j = fabric_json(*result);
    std::cout << (json ? j.dump() : j.dump(2)) << "\n";
    return 0;
  }

  if (!sa_key_text.empty()) {
    try {
      size_t used = 0;
      config.sa_key = std::stoull(sa_key_text, &used, 0);
      if (used != sa_key_text.size()) throw std::invalid_argument(sa_key_text);
    } catch (const std::exception&) {
      log_error(fmt::format("--sa-key '{}' is not a 64-bit number", sa_key_text));
      return 2;
    }
  }
  if (!config.opensm_conf_path.empty() &&
      !apply_opensm_conf(config, timeout_opt->count() > 0, sa_key_opt->count() > 0)) {
    return 2;
  }
  if (config.policy_path.empty() && !config.no_policy) {
    log_error("no policy: give --policy FILE, or --no-policy to answer with partition SLs");
    return 2;
  }
  options.rediscover_interval = std::chrono::seconds(rediscover_interval);
  options.control_socket_given = app.count("--control-socket") > 0;
  options.issm = !no_issm;
  options.rmpp = rmpp_mode == "on"    ? rdmaqos::sad::RmppMode::kOn
                 : rmpp_mode == "off" ? rdmaqos::sad::RmppMode::kOff
                                      : rdmaqos::sad::RmppMode::kAuto;

  detach = !foreground;
  int ready_fd = -1;
  if (detach) {
    ready_fd = daemonize();
    if (ready_fd < 0) {
      log_error(fmt::format("cannot fork: {}", std::strerror(errno)));
      return 1;
    }
  }
  if (detach || use_syslog) {
    openlog("rdma-qos-sad", LOG_PID, LOG_DAEMON);
    g_log.to_syslog = true;
  }
  install_signals();
  Daemon daemon(std::move(config), std::move(discovery), options);
  if (!daemon.start()) return 1;
  if (ready_fd >= 0) {
    g_log.to_stderr = false;
    detach_stdio();
    if (write(ready_fd, "R", 1) != 1) {
    }
    close(ready_fd);
  }
  return daemon.run();
}
