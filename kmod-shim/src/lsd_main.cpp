// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd: answers the kernel's PathRecord queries (RDMA netlink local service) with the
// SA's answer to a query that carries the Service-ID and QoS-Class, so the fabric's QoS policy
// reaches kernel ULPs; and serves the node's path service to local programs (the preload
// module) over a local socket, one SA query per path for the whole node. Started by systemd
// through rdma-qos-lsd.socket and/or rdma-qos-paths.socket, or by hand; SIGHUP re-reads
// rdma-qos.conf.
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lsd_control.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/common/log.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/common/service.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/kmod-shim/lsd.h"
#include "rdma-qos/kmod-shim/path_service.h"
#include "rdma-qos/sa-responder/control.h"

namespace {

using rdmaqos::common::Priority;
using rdmaqos::kmod::LocalServiceDaemon;
using rdmaqos::kmod::PathService;

// Exit statuses: 2 for a bad command line, 78 (EX_CONFIG) for a configuration file the daemon
// cannot run with, which the unit's RestartPreventExitStatus= names.
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 78;

// The signal handler may run on any of the daemon's threads: atomics, since volatile orders
// nothing between threads; lock-free, so the handler may use them.
static_assert(std::atomic<LocalServiceDaemon*>::is_always_lock_free &&
              std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
std::atomic<LocalServiceDaemon*> g_daemon{nullptr};
std::atomic<bool> g_reload{false};
std::atomic<bool> g_stop{false};
// Wakes the main thread when it serves no kernel (it then only waits for signals).
std::atomic<int> g_wake_fd{-1};

void on_signal(int sig) {
  if (sig == SIGHUP)
    g_reload = true;
  else
    g_stop = true;
  if (LocalServiceDaemon* d = g_daemon) d->stop();
  const int wake = g_wake_fd;
  if (wake >= 0) {
    uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);
  }
}

// The sockets systemd passed: the kernel's netlink one (rdma-qos-lsd.socket) and the path
// service's (rdma-qos-paths.socket), either or both. Told apart by their type, which cannot be
// misnamed, rather than by LISTEN_FDNAMES.
struct SystemdSockets {
  bool activated = false;  // LISTEN_FDS named this process: serve exactly what was passed
  int netlink = -1;
  int paths = -1;
};

// sd_listen_fds(3) by hand (the protocol is documented and stable, and socket activation must
// work in a build without libsystemd): LISTEN_FDS sockets from fd 3 when LISTEN_PID names this
// process.
SystemdSockets systemd_sockets(rdmaqos::common::Logger& logger) {
  SystemdSockets out;
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds) return out;
  auto p = rdmaqos::parse_unsigned(pid);
  auto n = rdmaqos::parse_unsigned(fds, 64);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!p || *p != static_cast<uint64_t>(getpid()) || !n || *n < 1) return out;
  out.activated = true;
  for (int fd = 3; fd < 3 + static_cast<int>(*n); ++fd) {
    int domain = 0, type = 0;
    socklen_t len = sizeof domain;
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
    len = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
    if (domain == AF_NETLINK && out.netlink < 0)
      out.netlink = fd;
    else if (domain == AF_UNIX && type == SOCK_SEQPACKET && out.paths < 0)
      out.paths = fd;
    else
      logger.warning(
          fmt::format("ignoring the socket systemd passed as fd {} (domain {}, type "
                      "{}): neither the kernel's netlink group nor a path socket",
                      fd, domain, type));
  }
  return out;
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
  std::string path_socket;  // empty: the path_service knob
  bool no_path_socket = false;
  bool no_kernel = false;
  bool no_path_sharing = false;
  int sa_agents = 4;
};

struct Settings {
  rdmaqos::kmod::LsdOptions options;
  rdmaqos::kmod::PathServiceOptions paths;
  std::string path_socket;  // --path-socket, else the path_service knob
  std::string sa_lids;      // the sa_lid list as given; empty: every port's SM LID
  Priority level = Priority::kWarning;
};

// The settings from the command line and rdma-qos.conf, or the errors and whether they came
// from the file (exit 78) rather than the command line (exit 2).
struct Loaded {
  std::optional<Settings> settings;
  rdmaqos::Diagnostics errors;
  bool config_error = false;
};

// A bad value of an option (origin "--sa-lid") or of a knob, named by where its value came from
// ("/etc/rdma/rdma-qos.conf:3", RDMA_QOS_SA_LID), the knob's name leading the message.
rdmaqos::Diagnostic bad_value(bool from_cli, const char* option, const char* knob,
                              const rdmaqos::config::HostConfig& cfg, std::string why) {
  if (from_cli) return {rdmaqos::Severity::kError, {0, 0}, std::move(why), {}, option};
  std::string origin = cfg.get(knob).origin;
  return {rdmaqos::Severity::kError,
          {0, 0},
          fmt::format("{}: {}", knob, why),
          {},
          origin.empty() ? std::string(knob) : origin};
}

Loaded load_settings(const CommandLine& cli) {
  Loaded out;
  auto loaded = rdmaqos::config::load_host_config();
  for (const auto& e : loaded.errors) {
    out.errors.push_back(e);
    out.config_error = true;
  }
  const auto& cfg = loaded.config;
  Settings s;
  const bool level_from_cli = !cli.log_level.empty();
  std::string level_text = level_from_cli ? cli.log_level : cfg.text("log_level");
  if (!rdmaqos::common::parse_priority(level_text, s.level)) {
    out.errors.push_back(
        bad_value(level_from_cli, "--log-level", "log_level", cfg,
                  fmt::format("'{}' is not error, warn, info or debug", level_text)));
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
    out.errors.push_back(bad_value(lid_from_cli, "--sa-lid", "sa_lid", cfg, lids.error().message));
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
  // The path service asks with the kernel listener's SA settings, through a cache that keeps
  // an answer for cache_ttl seconds (0: no cache, but identical questions in flight still
  // share one SA query).
  s.paths.sa = s.options.sa;
  s.paths.sa.window = 16;
  s.paths.sa_lid_of = s.options.sa_lid_of;
  s.paths.cache.ttl = std::chrono::seconds(cfg.number("cache_ttl"));
  s.paths.shared = !cli.no_path_sharing;
  s.path_socket = !cli.path_socket.empty() ? cli.path_socket : cfg.text("path_service");
  if (out.errors.empty()) out.settings = std::move(s);
  return out;
}

std::string status_of(const Settings& s, bool kernel, const std::string& path_socket, int reloads) {
  std::string serving = kernel ? "answering the kernel's path queries" : "";
  if (!path_socket.empty())
    serving += (serving.empty() ? "" : " and ") + fmt::format("serving paths at {}", path_socket);
  return fmt::format(
      "{}: SA {}, timeout {} ms, {} retries{}", serving,
      !s.sa_lids.empty() ? fmt::format("LID {}", s.sa_lids) : std::string("at the port's SM LID"),
      s.options.sa.timeout ? s.options.sa.timeout->count() : 0, s.options.sa.retries,
      reloads ? fmt::format(", configuration reloaded {} times", reloads) : "");
}

// Many local programs may hold a connection each: the soft limit on open files goes up to the
// hard one (systemd's default soft limit, 1024, is kept low for select(), which this daemon
// does not use).
void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Waits for a signal when no kernel listener runs on the main thread.
void wait_for_signal(int wake_fd) {
  while (!g_stop && !g_reload) {
    pollfd p{wake_fd, POLLIN, 0};
    if (poll(&p, 1, -1) > 0) {
      uint64_t count;
      (void)!read(wake_fd, &count, sizeof count);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rdma-qos-lsd: answers the kernel's path queries (RDMA netlink local service) with the "
      "SA's path for the query's Service-ID and QoS-Class; F_ERR (the kernel then asks the SA "
      "itself) whenever it cannot. Serves the node's path service to local programs as well: "
      "one SA query per path for every process of the node."};
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
  app.add_option("--path-socket", cli.path_socket,
                 "serve the node's path service at this socket (default: path_service of "
                 "rdma-qos.conf, /run/rdma-qos/paths.sock); mode 0666, every local user may ask");
  app.add_flag("--no-path-socket", cli.no_path_socket, "serve no path service")
      ->excludes("--path-socket");
  rdmaqos::add_number(app, "--sa-agents", cli.sa_agents,
                      "ignored: the path service asks through one umad agent per port, with "
                      "up to 16 questions outstanding (kept so that existing command lines work)")
      ->check(CLI::Range(1, 16));
  app.add_flag("--no-path-sharing", cli.no_path_sharing,
               "benchmarks only: ask the SA for every program's every question, no cache and "
               "no sharing of questions in flight, as if each program had its own SA client")
      ->excludes("--no-path-socket");
  app.add_flag("--no-kernel", cli.no_kernel,
               "do not listen for the kernel's path queries (a node where ibacm owns the "
               "kernel's path-query channel); serve the path socket only");
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
  if (!cli.control_group.empty() &&
      !(control_group = rdmaqos::sad::control_group_id(cli.control_group))) {
    logger.diagnostic(Priority::kError, fmt::format("error: --control-socket-group: no group '{}'",
                                                    cli.control_group));
    return kExitUsage;
  }
  Loaded loaded = load_settings(cli);
  for (const auto& e : loaded.errors)
    logger.diagnostic(Priority::kError, rdmaqos::format_diagnostic(e));
  if (!loaded.settings) return loaded.config_error ? kExitConfig : kExitUsage;
  Settings settings = std::move(*loaded.settings);
  logger.set_max(settings.level);

  // What to serve. Started by systemd: exactly the sockets it passed (rdma-qos-lsd.socket's
  // netlink group, rdma-qos-paths.socket's path socket), less what the command line turns off.
  // By hand: the kernel's channel and the path socket, less the same.
  const SystemdSockets passed = systemd_sockets(logger);
  const bool serve_kernel = !cli.no_kernel && (!passed.activated || passed.netlink >= 0);
  int path_fd = -1;
  std::string path_socket;     // where the path service listens, for the status line
  std::string created_socket;  // a socket file made here, removed at exit
  if (!cli.no_path_socket) {
    if (passed.activated) {
      path_fd = passed.paths;
      if (path_fd >= 0) path_socket = "the socket systemd passed";
    } else if (!settings.path_socket.empty()) {
      auto bound = rdmaqos::kmod::bind_path_socket(settings.path_socket);
      if (bound) {
        path_fd = *bound;
        path_socket = created_socket = settings.path_socket;
      } else if (!cli.path_socket.empty() || !serve_kernel) {
        logger.diagnostic(Priority::kError, "error: " + bound.error().message);
        return 1;
      } else {
        // The default socket is a convenience: the kernel's channel is still served.
        logger.warning(bound.error().message + "; serving no path socket");
      }
    }
  }
  if (!serve_kernel && path_fd < 0) {
    logger.diagnostic(Priority::kError,
                      passed.activated
                          ? "error: nothing to serve: systemd passed neither the kernel's netlink "
                            "socket nor a path socket (or the command line turned it off)"
                          : "error: nothing to serve: --no-kernel and no path socket");
    return kExitUsage;
  }
  raise_fd_limit();

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

  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  g_wake_fd = wake_fd;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The path service lives as long as the process: a reload re-opens its SA clients with the
  // new settings and flushes its cache, and keeps the listening socket and every connection.
  std::unique_ptr<PathService> paths;
  std::thread paths_thread;
  int paths_status = 0;
  auto path_options = [&counters](const Settings& s) {
    rdmaqos::kmod::PathServiceOptions o = s.paths;
    o.counters = counters;
    return o;
  };
  if (path_fd >= 0) {
    auto created = PathService::create(path_fd, path_options(settings), sink);
    if (!created) {
      logger.error(created.error().message);
      if (!foreground) std::cerr << "rdma-qos-lsd: " << created.error().message << "\n";
      return 1;
    }
    paths = std::move(*created);
    paths_thread = std::thread([&] {
      paths_status = paths->run();
      // A path service that failed takes the daemon down: systemd restarts it.
      if (paths_status != 0) on_signal(SIGTERM);
    });
  }
  auto finish = [&](int status) {
    rdmaqos::common::notify_stopping();
    if (paths) {
      paths->stop();
      paths_thread.join();
      paths.reset();
    }
    if (!created_socket.empty()) unlink(created_socket.c_str());
    return status != 0 ? status : paths_status;
  };

  // systemd's socket stays open here: each daemon (one per configuration) gets a duplicate and
  // closes only that, so a reload keeps the kernel's group joined and queued queries waiting.
  int reloads = 0;
  for (;;) {
    int status = 0;
    if (serve_kernel) {
      settings.options.inherited_fd = passed.netlink >= 0 ? dup(passed.netlink) : -1;
      settings.options.counters = counters;
      auto daemon = LocalServiceDaemon::create(settings.options, sink);
      if (!daemon) {
        logger.error(daemon.error().message);
        if (!foreground) std::cerr << "rdma-qos-lsd: " << daemon.error().message << "\n";
        return finish(1);
      }
      g_daemon = daemon->get();
      // A signal that came before g_daemon was set.
      if (g_reload || g_stop) (*daemon)->stop();
      rdmaqos::common::notify_ready(status_of(settings, true, path_socket, reloads));
      status = (*daemon)->run();
      g_daemon = nullptr;
      daemon->reset();
    } else {
      rdmaqos::common::notify_ready(status_of(settings, false, path_socket, reloads));
      wait_for_signal(wake_fd);
    }
    if (!g_reload || g_stop) return finish(status);
    g_reload = false;
    rdmaqos::common::notify_reloading();
    Loaded again = load_settings(cli);
    for (const auto& e : again.errors)
      logger.diagnostic(Priority::kError, rdmaqos::format_diagnostic(e));
    if (again.settings) {
      settings = std::move(*again.settings);
      logger.set_max(settings.level);
      if (paths) paths->reconfigure(path_options(settings));
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
