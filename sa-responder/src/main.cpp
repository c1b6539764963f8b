// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad: the policy-enforcing SA responder. Discovers the fabric, loads the policy and
// answers PathRecord / MultiPathRecord / ClassPortInfo queries at its port. Operated through
// signals (SIGHUP reloads, SIGUSR1 re-discovers) and a control socket (`rdma-qos sad`), which
// also reports the result of a reload and the counters.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "daemon.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/common/service.h"
#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/discovery_json.h"

namespace {

using rdmaqos::sad::Config;
using rdmaqos::sad::DaemonOptions;
using rdmaqos::sad::fabric_json;
using rdmaqos::sad::log;
using rdmaqos::sad::log_error;
using rdmaqos::sad::read_file;

// The M_Key from the environment as well as from --m-key: it keeps the key out of the process
// list (and the daemon hands it to its re-discovery processes this way).
constexpr const char* kMKeyVariable = "RDMA_QOS_SAD_M_KEY";

// Hands the M_Key to the discovery processes this one starts, through the environment: their
// command line would show it to every user. Called while the process has one thread.
void pass_m_key(uint64_t m_key) {
  if (m_key == 0) {
    unsetenv(kMKeyVariable);
  } else {
    setenv(kMKeyVariable, fmt::format("{:#x}", m_key).c_str(), 1);
  }
}

// The window of discovery's SMPs from OpenSM's max_wire_smps: the same bound as the SM's own
// sweeps, within the bounds of --smp-window (OpenSM's 0, no bound, is the most it takes).
size_t window_of_max_wire_smps(const std::string& path, uint32_t max_wire_smps) {
  const size_t most = rdmaqos::sad::kMaxSmpWindow;
  if (max_wire_smps != 0 && max_wire_smps <= most) return max_wire_smps;
  log(
      fmt::format("{}: max_wire_smps {}{}: discovery keeps {} SMPs in flight, the most "
                  "--smp-window takes",
                  path, max_wire_smps, max_wire_smps == 0 ? " (no bound)" : "", most));
  return most;
}

// Reads --opensm-conf: its values are defaults the command line overrides.
bool apply_opensm_conf(Config& config, rdmaqos::sad::DiscoveryOptions& discovery,
                       bool subnet_timeout_given, bool sa_key_given, bool smp_window_given,
                       bool m_key_given) {
  namespace pol = rdmaqos::policy;
  auto text = read_file(config.opensm_conf_path);
  if (!text) {
    log_error(
        fmt::format("{}: cannot read the file: {}", config.opensm_conf_path, text.error().message));
    return false;
  }
  pol::OpenSmConfResult r = pol::parse_opensm_conf(*text);
  for (const auto& d : r.diagnostics)
    rdmaqos::sad::log_diagnostic(rdmaqos::format_diagnostic(d, config.opensm_conf_path));
  if (rdmaqos::has_errors(r.diagnostics)) return false;
  // Engines that give each path its own SL (the deadlock-free layers of a looped fabric) decide
  // per LID pair, inside the SM: this SA cannot see them, and the policy's SL could close a
  // credit loop. OpenSM falls back along the list, so any of them may be the one routing.
  for (const std::string& engine : r.sm.routing_engines) {
    if (!pol::routing_engine_assigns_sls(engine)) continue;
    log_error(fmt::format(
        "{}: routing_engine {} gives each path its own SL, which rdma-qos-sad cannot see; its "
        "answers could deadlock the fabric. Run the rdma-qos OpenSM plugin instead "
        "(rdma-qos-opensm(8)): it asks the routing engine",
        config.opensm_conf_path, engine));
    return false;
  }
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
  config.original_extended_rates_only = r.sm.original_extended_rates_only.value_or(false);
  if (!sa_key_given && r.sm.sa_key) config.sa_key = *r.sm.sa_key;
  if (!smp_window_given && r.sm.max_wire_smps)
    discovery.smp_window = window_of_max_wire_smps(config.opensm_conf_path, *r.sm.max_wire_smps);
  if (!m_key_given && r.sm.m_key) discovery.m_key = *r.sm.m_key;
  return true;
}

// Forks; the parent waits until the child is ready (exit 0) or failed (the child's exit status),
// so a failed start still shows in the exit status. Returns the write end the child signals
// readiness on.
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
    // 'R': answering; another byte: the child's exit status (78 for a bad policy); none: 1.
    if (n != 1) _exit(1);
    _exit(c == 'R' ? 0 : static_cast<unsigned char>(c));
  }
  close(fds[0]);
  setsid();
  if (chdir("/") != 0) {
  }
  return fds[1];
}

// --dump-fabric --previous FILE: the model in force, from a --dump-fabric --json output (its
// JSON line; - reads standard input). An error (kTransport, kMalformed) when it is not one.
rdmaqos::Result<rdmaqos::sad::Discovery> read_previous(const std::string& path) {
  std::string text;
  if (path == "-") {
    char buf[65536];
    for (;;) {
      ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      if (n > 0) {
        text.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, path + ": cannot read the file");
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
  }
  // The JSON line: progress lines may come before it.
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text[at] == '{') {
      auto d = rdmaqos::sad::discovery_from_json_text(std::string_view(text).substr(at, end - at));
      if (d) return std::move(*d);
      break;
    }
    at = end + 1;
  }
  return rdmaqos::make_error(rdmaqos::ErrorCode::kMalformed,
                             (path == "-" ? std::string("standard input") : path) +
                                 ": no model (the JSON line of rdma-qos-sad --dump-fabric --json)");
}

// The full discovery in a process of its own (this program with --dump-fabric and the same
// port, on the same standard output): the incremental one has opened the SMP port, and
// libibnetdisc opening and closing another in the same process upsets umad2sim. Its exit status.
int full_discovery_process(const rdmaqos::sad::DiscoveryOptions& discovery, bool json) {
  std::vector<std::string> args = {"/proc/self/exe", "--dump-fabric"};
  if (json) args.emplace_back("--json");
  if (!discovery.ca.empty()) args.insert(args.end(), {"--ca", discovery.ca});
  if (discovery.port != 0) args.insert(args.end(), {"--port", std::to_string(discovery.port)});
  args.insert(args.end(), {"--smp-window", std::to_string(discovery.smp_window)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout << std::flush;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
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
  app.add_option(
         "--opensm-conf", config.opensm_conf_path,
         "opensm.conf: qos_policy_file, partition_config_file, subnet_timeout, sa_key, m_key, "
         "max_wire_smps, use_original_extended_sa_rates_only and the qos_* SL2VL defaults (the "
         "command line wins)")
      ->check(CLI::ExistingFile);
  auto* timeout_opt =
      rdmaqos::add_number(app, "--subnet-timeout", config.subnet_timeout,
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
  rdmaqos::add_number(app, "--rediscover-interval", rediscover_interval,
                      "seconds between re-discoveries of the fabric (0: only on request)")
      ->check(CLI::Range(0, 86400 * 365));
  rdmaqos::add_number(app, "--full-rediscover-every", options.full_rediscovery_every,
                      "re-discoveries are incremental; every Nth reads the whole fabric (1: all; "
                      "0: only `rdma-qos sad rediscover --full`)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--control-socket", options.control_socket,
                 "control socket (default /run/rdma-qos/sad-<ca>-<port>.sock; '' for none)");
  std::string control_group;
  app.add_option("--control-socket-group", control_group,
                 "let this group read the stats through the control socket (mode 0660), so "
                 "monitoring needs no root; reload and rediscover stay with root");
  std::string sm_traps = "on";
  app.add_option("--sm-traps", sm_traps,
                 "subscribe to the SM's traps 64, 65, 128 and 144 and re-discover within seconds "
                 "of its reports: on, off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  std::string issm_mode = "auto";
  app.add_option("--issm", issm_mode,
                 "hold the port's issm device (advertises an SM at the port): auto (only under "
                 "ibsim's umad2sim), on (where the SA takes over the SM's own port), off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_flag("--no-issm", no_issm, "the same as --issm off");
  std::string rmpp_mode = "auto";
  app.add_option("--rmpp", rmpp_mode,
                 "multi-MAD table answers (RMPP): auto (off under umad2sim), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  rdmaqos::add_number(
      app, "--answer-threads", options.answer_threads,
      "worker threads for answers that expand to many pairs (0: answer everything on "
      "the receiving thread)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  rdmaqos::add_number(app, "--max-records", options.max_records,
                      "most PathRecords in one table answer; a longer one gets ERR_NO_RESOURCES "
                      "(0: no bound)")
      ->capture_default_str();
  int answer_time_limit_ms = static_cast<int>(options.answer_time_limit.count());
  rdmaqos::add_number(app, "--answer-time-limit", answer_time_limit_ms,
                      "milliseconds one answer may take from its request's arrival, else "
                      "ERR_NO_RESOURCES (0: no bound)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  app.add_option("--ca", discovery.ca,
                 "CA to run at (default: the first); CA:PORT also sets the port (systemd's "
                 "instance name)");
  rdmaqos::add_number(app, "--port", discovery.port, "port of the CA (default: the first active)");
  auto* smp_window_opt =
      rdmaqos::add_number(app, "--smp-window", discovery.smp_window,
                          "SMPs discovery keeps in flight (OpenSM's max_wire_smps, whose default "
                          "it shares)")
          ->check(CLI::Range(size_t{1}, rdmaqos::sad::kMaxSmpWindow))
          ->capture_default_str();
  auto* m_key_opt = rdmaqos::add_number(app, "--m-key", discovery.m_key,
                                        "M_Key of discovery's SMPs (OpenSM's m_key; default 0: "
                                        "none), decimal or 0x-hex")
                        ->envname(kMKeyVariable);
  app.add_flag("--dump-fabric", dump_fabric, "discover the fabric, print the model and exit");
  app.add_flag("--json", json, "print JSON");
  std::string previous;
  app.add_option("--previous", previous,
                 "with --dump-fabric: re-discover incrementally against this model (a "
                 "--dump-fabric --json output; - for standard input), or in full where that "
                 "cannot be done");
  app.set_version_flag("--version", std::string("rdma-qos-sad ") + rdmaqos::common::version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : rdmaqos::sad::kExitUsage;
  }

  if (auto colon = discovery.ca.find(':'); colon != std::string::npos) {
    auto port = rdmaqos::parse_unsigned(std::string_view(discovery.ca).substr(colon + 1), 255);
    if (!port) {
      std::cerr << "rdma-qos-sad: --ca '" << discovery.ca << "' is not CA or CA:PORT\n";
      return rdmaqos::sad::kExitUsage;
    }
    discovery.port = static_cast<int>(*port);
    discovery.ca.resize(colon);
  }
  if (dump_fabric) {
    pass_m_key(discovery.m_key);
    // Progress lines before the JSON line: the daemon logs them, and its time limit counts
    // from the last one (a discovery that advances is never killed half-way).
    discovery.progress = [](const std::string& s) { std::cout << "discovery: " << s << std::endl; };
    if (!previous.empty()) {
      auto before = read_previous(previous);
      if (before) {
        auto outcome = rdmaqos::sad::rediscover_fabric(discovery, *before);
        if (outcome.found) {
          std::cout << (json ? rdmaqos::sad::fabric_json_line(*outcome.found)
                             : fabric_json(*outcome.found).dump(2))
                    << "\n";
          return 0;
        }
        std::cout << "discovery: incremental: " << outcome.fallback->message
                  << ": a full discovery instead" << std::endl;
        return full_discovery_process(discovery, json);
      }
      std::cout << "discovery: incremental: " << before.error().message
                << ": a full discovery instead" << std::endl;
    }
    auto result = rdmaqos::sad::discover_fabric(discovery);
    if (!result) {
      std::cerr << "rdma-qos-sad: discovery failed: " << result.error().message << "\n";
      return 1;
    }
    if (int status = rdmaqos::sad::refuse_unanswered(*result, discovery.m_key, "no model printed");
        status != 0) {
      return status;
    }
    std::cout << (json ? rdmaqos::sad::fabric_json_line(*result) : fabric_json(*result).dump(2))
              << "\n";
    return 0;
  }

  if (!sa_key_text.empty()) {
    // Decimal or 0x-hex like every number of ours: OpenSM writes sa_key in hex with 0x.
    auto key = rdmaqos::parse_unsigned(sa_key_text);
    if (!key) {
      log_error(
          fmt::format("--sa-key '{}' is not a 64-bit number (decimal or 0x-hex)", sa_key_text));
      return rdmaqos::sad::kExitUsage;
    }
    config.sa_key = *key;
  }
  if (!config.opensm_conf_path.empty() &&
      !apply_opensm_conf(config, discovery, timeout_opt->count() > 0, sa_key_opt->count() > 0,
                         smp_window_opt->count() > 0, m_key_opt->count() > 0)) {
    return rdmaqos::sad::kExitConfig;
  }
  pass_m_key(discovery.m_key);
  if (config.policy_path.empty() && !config.no_policy) {
    log_error("no policy: give --policy FILE, or --no-policy to answer with partition SLs");
    return rdmaqos::sad::kExitConfig;
  }
  if (!control_group.empty()) {
    if (auto gid = rdmaqos::sad::control_group_id(control_group)) {
      options.control_group = *gid;
    } else {
      log_error(fmt::format("--control-socket-group: no group '{}'", control_group));
      return rdmaqos::sad::kExitConfig;
    }
  }
  options.rediscover_interval = std::chrono::seconds(rediscover_interval);
  options.sm_traps = sm_traps == "on";
  options.answer_time_limit = std::chrono::milliseconds(answer_time_limit_ms);
  options.control_socket_given = app.count("--control-socket") > 0;
  options.issm =
      !no_issm && rdmaqos::sad::hold_issm(issm_mode == "on"    ? rdmaqos::sad::IssmMode::kOn
                                          : issm_mode == "off" ? rdmaqos::sad::IssmMode::kOff
                                                               : rdmaqos::sad::IssmMode::kAuto);
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
  if (detach || use_syslog) rdmaqos::sad::logger().set_syslog(true);
  rdmaqos::sad::install_signals();
  rdmaqos::sad::Daemon daemon(std::move(config), std::move(discovery), options);
  if (int status = daemon.start(); status != 0) {
    if (ready_fd >= 0) {
      const char code = static_cast<char>(status);
      if (write(ready_fd, &code, 1) != 1) {
      }
    }
    return status;
  }
  if (ready_fd >= 0) {
    rdmaqos::sad::logger().set_stderr(false);
    detach_stdio();
    if (write(ready_fd, "R", 1) != 1) {
    }
    close(ready_fd);
  }
  return daemon.run();
}
