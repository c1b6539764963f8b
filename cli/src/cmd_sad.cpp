// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos sad reload|rediscover|stats`: operates a running rdma-qos-sad through its control
// socket and shows what it reports (a reload's diagnostics, the counters).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>

#include "command.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/prometheus.h"

namespace rdmaqos::cli {
namespace {

struct SadArgs {
  std::string socket;
  std::string ca;
  int port = 1;
  bool json = false;
  std::string format = "text";  // stats only: text, json or prometheus
  double timeout = 300;
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

// The object under `key`, or an empty one: the OpenSM plugin's stats have the same counters
// but a "plugin" object instead of "sa", and fabric models instead of discoveries.
const nlohmann::json& part(const nlohmann::json& s, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = s.find(key);
  return it != s.end() && it->is_object() ? *it : kEmpty;
}

void print_stats(const nlohmann::json& s) {
  if (const auto& plugin = part(s, "plugin"); !plugin.empty()) {
    std::cout << fmt::format("OpenSM plugin in pid {}, {}, {} queries left to OpenSM, up {} s\n",
                             plugin.value("pid", 0),
                             plugin.value("answering", false) ? "answering" : "not answering",
                             plugin.value("fallbacks", 0), plugin.value("uptime_seconds", 0));
  } else {
    const auto& sa = part(s, "sa");
    std::cout << fmt::format("SA at {} port {}, LID {}, up {} s\n", sa.value("ca", "?"),
                             sa.value("port", 0), sa.value("lid", 0),
                             sa.value("uptime_seconds", 0));
  }
  const auto& p = part(s, "policy");
  auto file = p.find("file");
  std::cout << fmt::format(
      "policy: {} ({} rules), {} reloads, {} failed\n",
      file != p.end() && file->is_string() ? file->get<std::string>() : "(none)",
      p.value("rules", 0), p.value("reloads", 0), p.value("reload_failures", 0));
  const auto& f = part(s, "fabric");
  if (f.contains("models")) {
    std::cout << fmt::format("fabric: {} endpoints, {} models from OpenSM's subnet ({} failed)\n",
                             f.value("endpoints", 0), f.value("models", 0),
                             f.value("model_failures", 0));
  } else {
    std::cout << fmt::format("fabric: {} endpoints, {} discoveries ({} failed), last {}{}\n",
                             f.value("endpoints", 0), f.value("discoveries", 0),
                             f.value("discovery_failures", 0), f.value("last_discovery", "?"),
                             f.value("discovering", false) ? ", one under way" : "");
  }
  const auto& dropped = part(s, "dropped");
  std::cout << fmt::format(
      "requests {}, responses {}, dropped: SM_Key {}, unknown requester {}, undecodable {}\n",
      s.value("requests", 0), s.value("responses", 0), dropped.value("sm_key", 0),
      dropped.value("unknown_requester", 0), dropped.value("undecodable", 0));
  if (const auto& errors = part(s, "mad_errors"); !errors.empty()) {
    std::cout << fmt::format("MAD errors (the daemon goes on serving): receive {}, send {}\n",
                             errors.value("receive", 0), errors.value("send", 0));
  }
  auto table = [](const char* title, const nlohmann::json& m) {
    if (m.empty()) return;
    std::cout << title << ":\n";
    for (const auto& [k, v] : m.items())
      std::cout << fmt::format("  {:<40} {:>12}\n", k, v.get<uint64_t>());
  };
  table("requests by method", part(s, "methods"));
  table("responses by status", part(s, "statuses"));
  if (const auto& levels = part(s, "levels"); !levels.empty()) {
    std::cout << fmt::format("pairs by QoS level:\n  {:<40} {:>12} {:>12}\n", "level", "records",
                             "rejected");
    for (const auto& [k, v] : levels.items())
      std::cout << fmt::format("  {:<40} {:>12} {:>12}\n", k, v.value("records", 0),
                               v.value("rejected", 0));
  }
  table("rejections", part(s, "rejections"));
}

void run(const SadArgs& a, const std::string& command) {
  auto path = socket_path(a, command);
  if (!path) {
    set_exit_code(2);
    return;
  }
  auto reply = sad::control_call(*path, {{"command", command}},
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  if (!reply) {
    std::cerr << fmt::format("rdma-qos sad {}: {}\n", command, reply.error().message);
    set_exit_code(2);
    return;
  }
  const nlohmann::json& r = *reply;
  const bool ok = r.value("ok", false);
  if (command == "stats" && ok && a.format == "prometheus") {
    std::cout << sad::prometheus_text(r["stats"]);
  } else if (a.json || (command == "stats" && a.format == "json")) {
    std::cout << (command == "stats" && r.contains("stats") ? r["stats"] : r).dump(2) << "\n";
  } else if (command == "stats" && ok) {
    print_stats(r["stats"]);
  } else {
    if (r.contains("diagnostics"))
      for (const auto& d : r["diagnostics"]) std::cout << d.get<std::string>() << "\n";
    (ok ? std::cout : std::cerr) << r.value("message", ok ? "ok" : "failed") << "\n";
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
                Sub{"rediscover", "re-discover the fabric and wait for the result"},
                Sub{"stats", "counters per method, MAD status and QoS level"}}) {
    auto* sub = cmd->add_subcommand(s.name, s.help);
    sub->add_option("--socket", args->socket,
                    "the daemon's control socket (default: RDMA_QOS_SAD_SOCKET, or the only "
                    "daemon in /run/rdma-qos)");
    sub->add_option("--ca", args->ca, "the CA the daemon runs at");
    sub->add_option("--port", args->port, "its port")->capture_default_str();
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
    std::string name = s.name;
    sub->callback([args, name] { run(*args, name); });
  }
}

const CommandRegistration kRegistration{"sad", &setup_sad};

}  // namespace
}  // namespace rdmaqos::cli
