// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos opensm-plugin reload|rediscover|stats|status|pause|resume|explain`: operates the
// rdma-qos OpenSM plugin inside a running OpenSM through its control socket (the protocol of
// rdma-qos-sad's).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cmd_explain.h"
#include "command.h"
#include "control_reply.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::cli::cmd_opensm_plugin {
namespace {

constexpr const char* kDefaultSocket = "/run/rdma-qos/opensm-plugin.sock";

struct PluginArgs {
  std::string socket = kDefaultSocket;
  bool json = false;
  std::string format = "text";  // stats only: text, json or prometheus
  double timeout = 300;
};

void run(const PluginArgs& a, const std::string& command) {
  auto reply = sad::control_call(a.socket, {{"command", command}},
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  if (!reply) {
    std::cerr << fmt::format("rdma-qos opensm-plugin {}: {}: {}\n", command, a.socket,
                             reply.error().message);
    set_exit_code(2);
    return;
  }
  const nlohmann::json& r = *reply;
  const bool ok = r.value("ok", false);
  if (command == "stats" && ok && a.format == "prometheus") {
    if (!print_prometheus(r["stats"], "rdma-qos opensm-plugin stats")) {
      set_exit_code(1);
      return;
    }
  } else {
    show_control_reply(r, command, a.json || (command == "stats" && a.format == "json"));
  }
  set_exit_code(ok ? 0 : 1);
}

// Whether the plugin answers: exit 0 when it does, 1 when OpenSM's own handlers answer (with
// why), 2 when no plugin answers on the socket (OpenSM runs without it: not loaded, refused at
// load, an OpenSM of another version).
void status(const PluginArgs& a) {
  auto reply = sad::control_call(a.socket, {{"command", "stats"}},
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  nlohmann::json out = {{"socket", a.socket}, {"loaded", false}, {"answering", false}};
  if (!reply || !reply->value("ok", false)) {
    out["reason"] = fmt::format(
        "no rdma-qos plugin answers on {} ({}): OpenSM runs without it, or is not running",
        a.socket, reply ? reply->value("message", "refused") : reply.error().message);
    set_exit_code(2);
  } else {
    const nlohmann::json& stats = (*reply)["stats"];
    const nlohmann::json plugin = stats.value("plugin", nlohmann::json::object());
    out["loaded"] = true;
    out["answering"] = plugin.value("answering", false);
    out["reason"] = plugin.value("handed_to_opensm", nlohmann::json(nullptr));
    out["routing"] = stats.value("routing", nlohmann::json(nullptr));
    out["endpoints"] = stats.value("fabric", nlohmann::json::object()).value("endpoints", 0);
    set_exit_code(out["answering"].get<bool>() ? 0 : 1);
  }
  if (a.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (!out["loaded"].get<bool>()) {
    std::cerr << "rdma-qos opensm-plugin status: " << out["reason"].get<std::string>() << "\n";
    return;
  }
  if (out["answering"].get<bool>()) {
    std::cout << fmt::format("answering PathRecord and MultiPathRecord: {} endpoints\n",
                             out["endpoints"].get<uint64_t>());
  } else {
    std::cout << "not answering: OpenSM's own handlers answer ("
              << (out["reason"].is_string() ? out["reason"].get<std::string>() : "?") << ")\n";
  }
  if (const nlohmann::json& r = out["routing"]; r.is_object()) {
    std::cout << fmt::format("routing engine: {}{}\n", r.value("engine", "?"),
                             r.value("assigns_sl", false)
                                 ? " (assigns path SLs: answers take its SL, MultiPathRecords are "
                                   "OpenSM's)"
                                 : "");
    if (!r.value("qos_setup_applied", true))
      std::cout << "qos-setup: not applied under this engine (OpenSM's own SL2VL and VLArb "
                   "tables keep its layers apart)\n";
  }
}

void setup_opensm_plugin(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "opensm-plugin", "operate the rdma-qos plugin inside a running OpenSM (rdma-qos-opensm(8))");
  cmd->require_subcommand(1);
  auto args = std::make_shared<PluginArgs>();
  struct Sub {
    const char* name;
    const char* help;
  };
  for (Sub s : {Sub{"reload", "read the policy and partitions again; prints every diagnostic"},
                Sub{"rediscover", "build a new model from OpenSM's subnet now"},
                Sub{"stats", "counters per method, MAD status and rejection; models; reloads"},
                Sub{"status",
                    "whether the plugin answers (exit 0), OpenSM's handlers do (1, with why) or "
                    "no plugin is reachable (2); the routing engine"},
                Sub{"pause", "let OpenSM's own handlers answer every path query until resume"},
                Sub{"resume", "answer path queries again after pause"}}) {
    auto* sub = cmd->add_subcommand(s.name, s.help);
    sub->add_option("--socket", args->socket, "the plugin's control socket")->capture_default_str();
    sub->add_option("--timeout", args->timeout, "seconds to wait for the reply")
        ->capture_default_str();
    sub->add_flag("--json", args->json, "print the plugin's JSON reply");
    if (std::string(s.name) == "stats") {
      sub->add_option("--format", args->format,
                      "text, json (as --json) or prometheus (the text exposition format, for "
                      "node-exporter's textfile collector)")
          ->check(CLI::IsMember({"text", "json", "prometheus"}))
          ->capture_default_str();
    }
    std::string name = s.name;
    if (name == "status")
      sub->callback([args] { status(*args); });
    else
      sub->callback([args, name] { run(*args, name); });
  }
  auto* explain = add_explain_command(cmd, "opensm-plugin",
                                      [args] { return std::optional<std::string>(args->socket); });
  explain->add_option("--socket", args->socket, "the plugin's control socket")
      ->capture_default_str();
}

const CommandRegistration kRegistration{"opensm-plugin", &setup_opensm_plugin};

}  // namespace
}  // namespace rdmaqos::cli::cmd_opensm_plugin
