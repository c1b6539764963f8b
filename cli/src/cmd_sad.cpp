// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos sad reload|rediscover|stats|explain`: operates a running rdma-qos-sad through its
// control socket and shows what it reports (a reload's diagnostics, the counters).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>

#include "cmd_explain.h"
#include "command.h"
#include "control_reply.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::cli::cmd_sad {
namespace {

struct SadArgs {
  std::string socket;
  std::string ca;
  int port = 1;
  bool json = false;
  std::string format = "text";  // stats only: text, json or prometheus
  double timeout = 300;
  bool full = false;  // rediscover only: the whole fabric, not incrementally
};

// The daemon's socket: --socket, then sad_socket (RDMA_QOS_SAD_SOCKET), then --ca/--port, then the
// only daemon running on this host.
std::optional<std::string> socket_path(const SadArgs& a, const std::string& name) {
  if (!a.socket.empty()) return a.socket;
  if (auto configured = config::load_host_config().config.text("sad_socket"); !configured.empty())
    return configured;
  if (!a.ca.empty()) return sad::control_socket_path(a.ca, a.port);
  auto found = sad::find_control_sockets();
  if (found.size() == 1) return found[0];
  if (found.empty()) {
    std::cerr << fmt::format("rdma-qos sad {}: no rdma-qos-sad control socket in {}\n", name,
                             sad::kControlDir);
  } else {
    std::cerr << fmt::format(
        "rdma-qos sad {}: several daemons run; pick one with --socket or "
        "--ca/--port:\n",
        name);
    for (const auto& s : found) std::cerr << "  " << s << "\n";
  }
  return std::nullopt;
}

void run(const SadArgs& a, const std::string& command) {
  auto path = socket_path(a, command);
  if (!path) {
    set_exit_code(2);
    return;
  }
  nlohmann::json request = {{"command", command}};
  if (command == "rediscover" && a.full) request["full"] = true;
  auto reply = sad::control_call(*path, request,
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  if (!reply) {
    std::cerr << fmt::format("rdma-qos sad {}: {}\n", command, reply.error().message);
    set_exit_code(2);
    return;
  }
  const nlohmann::json& r = *reply;
  const bool ok = r.value("ok", false);
  if (command == "stats" && ok && a.format == "prometheus") {
    if (!print_prometheus(r["stats"], "rdma-qos sad stats")) {
      set_exit_code(1);
      return;
    }
  } else {
    show_control_reply(r, command, a.json || (command == "stats" && a.format == "json"));
  }
  set_exit_code(ok ? 0 : 1);
}

void setup_sad(CLI::App& app) {
  auto* cmd = app.add_subcommand("sad", "operate a running rdma-qos-sad (the SA responder)");
  cmd->require_subcommand(1);
  auto args = std::make_shared<SadArgs>();
  struct Sub {
    const char* name;
    const char* help;
  };
  for (Sub s : {Sub{"reload", "reload partitions and policy; prints every diagnostic"},
                Sub{"rediscover",
                    "re-discover the fabric (incrementally unless --full) and wait for the result"},
                Sub{"stats", "counters per method, MAD status and QoS level"}}) {
    auto* sub = cmd->add_subcommand(s.name, s.help);
    sub->add_option("--socket", args->socket,
                    "the daemon's control socket (default: RDMA_QOS_SAD_SOCKET, or the only "
                    "daemon in /run/rdma-qos)");
    sub->add_option("--ca", args->ca, "the CA the daemon runs at");
    add_number(*sub, "--port", args->port, "its port")->capture_default_str();
    sub->add_option("--timeout", args->timeout, "seconds to wait for the reply")
        ->capture_default_str();
    sub->add_flag("--json", args->json, "print the daemon's JSON reply");
    if (std::string(s.name) == "stats") {
      sub->add_option("--format", args->format,
                      "text, json (as --json) or prometheus (the text exposition format, for "
                      "node-exporter's textfile collector)")
          ->check(CLI::IsMember({"text", "json", "prometheus"}))
          ->capture_default_str();
    }
    if (std::string(s.name) == "rediscover") {
      sub->add_flag("--full", args->full,
                    "read the whole fabric (default: incrementally, only what changed since the "
                    "model in force)");
    }
    std::string name = s.name;
    sub->callback([args, name] { run(*args, name); });
  }
  auto* explain = add_explain_command(cmd, "sad", [args] { return socket_path(*args, "explain"); });
  explain->add_option("--socket", args->socket, "the daemon's control socket");
  explain->add_option("--ca", args->ca, "the CA the daemon runs at");
  add_number(*explain, "--port", args->port, "its port")->capture_default_str();
}

const CommandRegistration kRegistration{"sad", &setup_sad};

}  // namespace
}  // namespace rdmaqos::cli::cmd_sad
