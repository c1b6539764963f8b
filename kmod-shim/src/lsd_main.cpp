// rdma-qos-lsd: answers the kernel's PathRecord queries (RDMA netlink local service) with the
// SA's answer to a query that carries the Service-ID and QoS-Class, so the fabric's QoS policy
// reaches kernel ULPs. Started by systemd through rdma-qos-lsd.socket or by hand.
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "rdma-qos/config/host_config.h"
#include "rdma-qos/kmod-shim/lsd.h"

namespace {

using rdmaqos::kmod::LocalServiceDaemon;
using rdmaqos::kmod::LogLevel;

LocalServiceDaemon* g_daemon = nullptr;

void on_signal(int) {
  if (g_daemon) g_daemon->stop();
}

std::optional<LogLevel> parse_level(const std::string& s) {
  if (s == "error") return LogLevel::kError;
  if (s == "warn") return LogLevel::kWarn;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug") return LogLevel::kDebug;
  return std::nullopt;
}

std::optional<unsigned long> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    unsigned long v = std::stoul(s, &used, 0);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// sd_listen_fds(3) by hand (the protocol is documented and stable; libsystemd is not among the
// build dependencies): one socket at fd 3 when LISTEN_PID names this process.
int systemd_socket() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds) return -1;
  auto p = parse_number(pid);
  auto n = parse_number(fds);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!p || *p != static_cast<unsigned long>(getpid()) || !n || *n < 1) return -1;
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rdma-qos-lsd: answers the kernel's path queries (RDMA netlink local service) with the "
      "SA's path for the query's Service-ID and QoS-Class; F_ERR (the kernel then asks the SA "
      "itself) whenever it cannot."};
  bool foreground = false;
  std::string ca, log_level_text, sa_lid_text;
  int port = 0;
  std::optional<int> sa_timeout_ms, sa_retries;
  std::optional<uint32_t> usersock_kernel_port;
  std::optional<int> responder_check_ms;
  app.add_flag("--foreground,-f", foreground, "stay in the foreground and log to stderr");
  app.add_option("--ca", ca,
                 "CA whose umad port queries the SA (default: the first active IB one)");
  app.add_option("--port", port, "port of that CA (default: its first active IB port)")
      ->check(CLI::Range(0, 254));
  app.add_option("--sa-lid", sa_lid_text,
                 "LID of the SA (default: sa_lid, else the port's SM LID)");
  app.add_option("--sa-timeout-ms", sa_timeout_ms,
                 "timeout of one SA attempt (default: sa_timeout_ms of rdma-qos.conf)")
      ->check(CLI::Range(1, 60000));
  app.add_option("--sa-retries", sa_retries, "SA retries (default: sa_retries of rdma-qos.conf)")
      ->check(CLI::Range(0, 10));
  app.add_option("--log-level", log_level_text, "error, warn, info or debug (default: log_level)");
  app.add_option("--test-usersock-kernel", usersock_kernel_port,
                 "testing only: use NETLINK_USERSOCK and treat netlink port PORT as the kernel")
      ->group("");
  app.add_option("--test-responder-check-ms", responder_check_ms,
                 "testing only: look for other responders every MS milliseconds (default 30 s)")
      ->check(CLI::Range(10, 3600000))
      ->group("");
  CLI11_PARSE(app, argc, argv);

  auto loaded = rdmaqos::config::load_host_config();
  for (const auto& e : loaded.errors) std::cerr << "rdma-qos-lsd: " << e.message << "\n";
  const auto& cfg = loaded.config;

  if (log_level_text.empty()) log_level_text = cfg.text("log_level");
  auto level = parse_level(log_level_text);
  if (!level) {
    std::cerr << "rdma-qos-lsd: --log-level: '" << log_level_text
              << "' is not error, warn, info or debug\n";
    return 2;
  }
  rdmaqos::kmod::LsdOptions options;
  options.sa.port.ca = ca;
  options.sa.port.port = port;
  if (sa_lid_text.empty()) sa_lid_text = cfg.text("sa_lid");
  if (!sa_lid_text.empty()) {
    auto lid = parse_number(sa_lid_text);
    if (!lid || *lid == 0 || *lid > 0xBFFF) {
      std::cerr << "rdma-qos-lsd: --sa-lid: '" << sa_lid_text << "' is not a LID 1..0xbfff\n";
      return 2;
    }
    options.sa.sa_lid = static_cast<uint16_t>(*lid);
  }
  options.sa.timeout = std::chrono::milliseconds(sa_timeout_ms.value_or(
      static_cast<int>(parse_number(cfg.text("sa_timeout_ms")).value_or(1000))));
  options.sa.retries =
      sa_retries.value_or(static_cast<int>(parse_number(cfg.text("sa_retries")).value_or(2)));
  options.sa.window = 32;
  options.inherited_fd = systemd_socket();
  if (responder_check_ms) options.responder_check = std::chrono::milliseconds(*responder_check_ms);
  if (usersock_kernel_port) {
    options.netlink_family = 2;  // NETLINK_USERSOCK
    options.kernel_port = *usersock_kernel_port;
  }

  const bool to_stderr = foreground;
  if (!to_stderr) openlog("rdma-qos-lsd", LOG_PID, LOG_DAEMON);
  const LogLevel max_level = *level;
  auto sink = [to_stderr, max_level](LogLevel l, const std::string& message) {
    if (l > max_level) return;
    static const char* const kNames[] = {"error", "warning", "info", "debug"};
    static const int kPriorities[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    if (to_stderr)
      std::fprintf(stderr, "rdma-qos-lsd: %s: %s\n", kNames[static_cast<int>(l)], message.c_str());
    else
      syslog(kPriorities[static_cast<int>(l)], "%s", message.c_str());
  };

  // Detach before any thread exists (run() starts the SA worker).
  if (!foreground && ::daemon(0, 0) != 0) {
    std::perror("rdma-qos-lsd: daemon");
    return 1;
  }
  auto daemon = LocalServiceDaemon::create(options, sink);
  if (!daemon) {
    sink(LogLevel::kError, daemon.error().message);
    if (!foreground) std::cerr << "rdma-qos-lsd: " << daemon.error().message << "\n";
    return 1;
  }
  g_daemon = daemon->get();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int status = (*daemon)->run();
  g_daemon = nullptr;
  return status;
}
