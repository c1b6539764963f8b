// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd: answers the kernel's PathRecord queries (RDMA netlink local service) with the
// SA's answer to a query that carries the Service-ID and QoS-Class, so the fabric's QoS policy
// reaches kernel ULPs. Started by systemd through rdma-qos-lsd.socket or by hand; SIGHUP
// re-reads rdma-qos.conf.
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "lsd_control.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/log.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/common/service.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/kmod-shim/lsd.h"

namespace {

using rdmaqos::common::Priority;
using rdmaqos::kmod::LocalServiceDaemon;

// Exit statuses: 2 for a bad command line, 78 (EX_CONFIG) for a configuration file the daemon
// cannot run with, which the unit's RestartPreventExitStatus= names.
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 78;

// The signal handler may run on any of the daemon's threads: atomics, since volatile orders
// nothing between threads; lock-free, so the handler may use them.
static_assert(std::atomic<LocalServiceDaemon*>::is_always_lock_free &&
              std::atomic<bool>::is_always_lock_free);
std::atomic<LocalServiceDaemon*> g_daemon{nullptr};
std::atomic<bool> g_reload{false};

void on_signal(int sig) {
  if (sig == SIGHUP) g_reload = true;
  if (LocalServiceDaemon* d = g_daemon) d->stop();
}

// sd_listen_fds(3) by hand (the protocol is documented and stable, and socket activation must
// work in a build without libsystemd): one socket at fd 3 when LISTEN_PID names this process.
int systemd_socket() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds) return -1;
  auto p = rdmaqos::parse_unsigned(pid);
  auto n = rdmaqos::parse_unsigned(fds);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!p || *p != static_cast<uint64_t>(getpid()) || !n || *n < 1) return -1;
  return 3;
}

// What the command line says; the configuration file fills in the rest on every (re)load.
struct CommandLine {
  std::string ca, log_level, sa_lid;
  int port = 0;
  std::optional<int> sa_timeout_ms, sa_retries;
  std::string dump_netlink;
  std::optional<uint32_t> usersock_kernel_port;
  std::optional<int> responder_check_ms;
  std::string control_socket = rdmaqos::kmod::kLsdControlSocket;
  std::string control_group;
  bool no_control_socket = false;
};

// --control-socket-group: a group name, or a numeric GID.
std::optional<gid_t> group_id(const std::string& name) {
  if (const group* g = getgrnam(name.c_str())) return g->gr_gid;
  if (auto n = rdmaqos::parse_unsigned(name, UINT32_MAX - 1)) return static_cast<gid_t>(*n);
  return std::nullopt;
}

struct Settings {
  rdmaqos::kmod::LsdOptions options;
  std::string sa_lids;  // the sa_lid list as given; empty: every port's SM LID
  Priority level = Priority::kWarning;
};

// The settings from the command line and rdma-qos.conf, or the errors (as "FIELD: why") and
// whether they came from the file (exit 78) rather than the command line (exit 2).
struct Loaded {
  std::optional<Settings> settings;
  std::vector<std::string> errors;
  bool config_error = false;
};

Loaded load_settings(const CommandLine& cli) {
  Loaded out;
  auto loaded = rdmaqos::config::load_host_config();
  for (const auto& e : loaded.errors) {
    out.errors.push_back(rdmaqos::format_diagnostic(e));
    out.config_error = true;
  }
  const auto& cfg = loaded.config;
  Settings s;
  const bool level_from_cli = !cli.log_level.empty();
  std::string level_text = level_from_cli ? cli.log_level : cfg.text("log_level");
  if (!rdmaqos::common::parse_priority(level_text, s.level)) {
    out.errors.push_back(fmt::format("error: {}: '{}' is not error, warn, info or debug",
                                     level_from_cli ? "--log-level" : "log_level", level_text));
    out.config_error = out.config_error || !level_from_cli;
  }
  s.options.sa.port.ca = cli.ca;
  s.options.sa.port.port = cli.port;
  const bool lid_from_cli = !cli.sa_lid.empty();
  std::string lid_text = lid_from_cli ? cli.sa_lid : cfg.text("sa_lid");
  if (auto lids = rdmaqos::config::parse_port_lids(lid_text)) {
    if (!lids->entries.empty()) {
      s.sa_lids = lid_text;
      s.options.sa_lid_of = [lids = *lids](const std::string& device, int port) {
        return rdmaqos::config::port_lid_of(lids, device, static_cast<uint32_t>(port));
      };
    }
  } else {
    out.errors.push_back(
        fmt::format("error: {}: {}", lid_from_cli ? "--sa-lid" : "sa_lid", lids.error().message));
    out.config_error = out.config_error || !lid_from_cli;
  }
  s.options.sa.timeout = std::chrono::milliseconds(
      cli.sa_timeout_ms.value_or(static_cast<int>(cfg.number("sa_timeout_ms"))));
  s.options.sa.retries = cli.sa_retries.value_or(static_cast<int>(cfg.number("sa_retries")));
  s.options.sa.window = 32;
  if (cli.responder_check_ms)
    s.options.responder_check = std::chrono::milliseconds(*cli.responder_check_ms);
  s.options.netlink_dump_dir = cli.dump_netlink;
  if (cli.usersock_kernel_port) {
    s.options.netlink_family = 2;  // NETLINK_USERSOCK
    s.options.kernel_port = *cli.usersock_kernel_port;
  }
  if (out.errors.empty()) out.settings = std::move(s);
  return out;
}

std::string status_of(const Settings& s, int reloads) {
  return fmt::format(
      "answering the kernel's path queries: SA {}, timeout {} ms, {} retries{}",
      !s.sa_lids.empty() ? fmt::format("LID {}", s.sa_lids) : std::string("at the port's SM LID"),
      s.options.sa.timeout ? s.options.sa.timeout->count() : 0, s.options.sa.retries,
      reloads ? fmt::format(", configuration reloaded {} times", reloads) : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rdma-qos-lsd: answers the kernel's path queries (RDMA netlink local service) with the "
      "SA's path for the query's Service-ID and QoS-Class; F_ERR (the kernel then asks the SA "
      "itself) whenever it cannot."};
  bool foreground = false;
  CommandLine cli;
  app.add_flag("--foreground,-f", foreground, "stay in the foreground and log to stderr");
  app.add_option("--ca", cli.ca,
                 "not used: each request is answered through the device and port it names "
                 "(kept so that old command lines start; a warning says so)");
  rdmaqos::add_number(app, "--port", cli.port, "not used, as --ca")->check(CLI::Range(0, 254));
  app.add_option("--sa-lid", cli.sa_lid,
                 "LID of the SA, for every port or per port ([DEV[:PORT]=]LID,...; default: "
                 "sa_lid, else each port's SM LID)");
  rdmaqos::add_number(app, "--sa-timeout-ms", cli.sa_timeout_ms,
                      "timeout of one SA attempt (default: sa_timeout_ms of rdma-qos.conf)")
      ->check(CLI::Range(1, 60000));
  rdmaqos::add_number(app, "--sa-retries", cli.sa_retries,
                      "SA retries (default: sa_retries of rdma-qos.conf)")
      ->check(CLI::Range(0, 10));
  app.add_option("--log-level", cli.log_level, "error, warn, info or debug (default: log_level)");
  app.add_option("--control-socket", cli.control_socket,
                 "where `rdma-qos kernel stats` reads the counters")
      ->capture_default_str();
  app.add_option("--control-socket-group", cli.control_group,
                 "let this group read the counters through the control socket (mode 0660), so "
                 "monitoring needs no root");
  app.add_flag("--no-control-socket", cli.no_control_socket, "serve no control socket");
  app.add_option("--dump-netlink", cli.dump_netlink,
                 "also write each datagram from the kernel to a file in DIR (debugging)");
  rdmaqos::add_number(
      app, "--test-usersock-kernel", cli.usersock_kernel_port,
      "testing only: use NETLINK_USERSOCK and treat netlink port PORT as the kernel")
      ->group("");
  rdmaqos::add_number(
      app, "--test-responder-check-ms", cli.responder_check_ms,
      "testing only: look for other responders every MS milliseconds (default 30 s)")
      ->check(CLI::Range(10, 3600000))
      ->group("");
  app.set_version_flag("--version", std::string("rdma-qos-lsd ") + rdmaqos::common::version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  rdmaqos::common::Logger logger("rdma-qos-lsd");
  std::optional<gid_t> control_group;
  if (!cli.control_group.empty() && !(control_group = group_id(cli.control_group))) {
    logger.diagnostic(Priority::kError, fmt::format("error: --control-socket-group: no group '{}'",
                                                    cli.control_group));
    return kExitUsage;
  }
  Loaded loaded = load_settings(cli);
  for (const auto& e : loaded.errors) logger.diagnostic(Priority::kError, e);
  if (!loaded.settings) return loaded.config_error ? kExitConfig : kExitUsage;
  Settings settings = std::move(*loaded.settings);
  logger.set_max(settings.level);

  // Detach before any thread exists (run() starts the SA worker).
  if (!foreground) {
    if (::daemon(0, 0) != 0) {
      std::perror("rdma-qos-lsd: daemon");
      return 1;
    }
    logger.set_stderr(false);
    logger.set_syslog(true);
  }
  auto sink = [&logger](Priority p, const std::string& message) { logger.log(p, message); };

  // The counters and the control socket outlive each engine: a reload keeps both.
  auto counters = std::make_shared<rdmaqos::kmod::LsdCounters>();
  std::unique_ptr<rdmaqos::kmod::LsdControl> control;
  if (!cli.no_control_socket) {
    auto started = rdmaqos::kmod::LsdControl::start(cli.control_socket, control_group, counters);
    if (started)
      control = std::move(*started);
    else
      logger.log(
          app.count("--control-socket") || control_group ? Priority::kError : Priority::kInfo,
          "no control socket (" + started.error().message + "): no stats");
  }

  // systemd's socket stays open here: each daemon (one per configuration) gets a duplicate and
  // closes only that, so a reload keeps the kernel's group joined and queued queries waiting.
  const int systemd_fd = systemd_socket();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int reloads = 0;
  for (;;) {
    settings.options.inherited_fd = systemd_fd >= 0 ? dup(systemd_fd) : -1;
    settings.options.counters = counters;
    auto daemon = LocalServiceDaemon::create(settings.options, sink);
    if (!daemon) {
      logger.error(daemon.error().message);
      if (!foreground) std::cerr << "rdma-qos-lsd: " << daemon.error().message << "\n";
      return 1;
    }
    g_daemon = daemon->get();
    if (g_reload) (*daemon)->stop();  // a SIGHUP that came before g_daemon was set
    rdmaqos::common::notify_ready(status_of(settings, reloads));
    int status = (*daemon)->run();
    g_daemon = nullptr;
    daemon->reset();
    if (!g_reload) {
      rdmaqos::common::notify_stopping();
      return status;
    }
    g_reload = false;
    rdmaqos::common::notify_reloading();
    Loaded again = load_settings(cli);
    for (const auto& e : again.errors) logger.diagnostic(Priority::kError, e);
    if (again.settings) {
      settings = std::move(*again.settings);
      logger.set_max(settings.level);
      ++reloads;
      counters->reload(true);
      // info: a reload someone asked for is routine (the journal shows it at the default
      // level); its failure above is an error, since the file on disk is not what runs.
      logger.info("configuration reloaded");
    } else {
      counters->reload(false);
      logger.error("configuration reload failed: the previous configuration stays in force");
    }
  }
}
