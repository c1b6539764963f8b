// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos opensm-plugin reload|rediscover|stats|explain`: operates the rdma-qos OpenSM plugin
// inside a running OpenSM through its control socket (the protocol of rdma-qos-sad's).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cmd_explain.h"
#include "command.h"
#include "control_reply.h"
#include "plugin_prometheus.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::cli {
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
  if (command == "stats" && ok && a.format == "prometheus")
    std::cout << plugin_prometheus_text(r["stats"]);
  else
    show_control_reply(r, command, a.json || (command == "stats" && a.format == "json"));
  set_exit_code(ok ? 0 : 1);
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
                Sub{"stats", "counters per method, MAD status and rejection; models; reloads"}}) {
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
    sub->callback([args, name] { run(*args, name); });
  }
  auto* explain = add_explain_command(cmd, "opensm-plugin",
                                      [args] { return std::optional<std::string>(args->socket); });
  explain->add_option("--socket", args->socket, "the plugin's control socket")
      ->capture_default_str();
}

const CommandRegistration kRegistration{"opensm-plugin", &setup_opensm_plugin};

}  // namespace
}  // namespace rdmaqos::cli
