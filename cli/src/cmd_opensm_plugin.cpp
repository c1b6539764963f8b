// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos opensm-plugin reload|rediscover|stats`: operates the rdma-qos OpenSM plugin inside a
// running OpenSM through its control socket (the protocol of rdma-qos-sad's).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::cli {
namespace {

constexpr const char* kDefaultSocket = "/run/rdma-qos/opensm-plugin.sock";

struct PluginArgs {
  std::string socket = kDefaultSocket;
  bool json = false;
  double timeout = 300;
};

void print_table(const char* title, const nlohmann::json& m) {
  if (!m.is_object() || m.empty()) return;
  std::cout << title << ":\n";
  for (const auto& [k, v] : m.items())
    std::cout << fmt::format("  {:<40} {:>12}\n", k, v.is_number() ? v.get<uint64_t>() : 0);
}

void print_stats(const nlohmann::json& s) {
  const nlohmann::json none = nlohmann::json::object();
  const auto& pl = s.contains("plugin") ? s["plugin"] : none;
  const auto& p = s.contains("policy") ? s["policy"] : none;
  const auto& f = s.contains("fabric") ? s["fabric"] : none;
  std::cout << fmt::format("plugin in OpenSM (pid {}), {}, up {} s, {} queries handed to OpenSM\n",
                           pl.value("pid", 0),
                           pl.value("answering", false) ? "answering" : "not answering yet",
                           pl.value("uptime_seconds", 0), pl.value("fallbacks", 0));
  std::cout << fmt::format(
      "policy: {} ({} rules), {} reloads, {} failed\n",
      p.contains("file") && p["file"].is_string() ? p["file"].get<std::string>() : "(none)",
      p.value("rules", 0), p.value("reloads", 0), p.value("reload_failures", 0));
  std::cout << fmt::format("fabric: {} endpoints, {} models from OpenSM's subnet ({} failed)\n",
                           f.value("endpoints", 0), f.value("models", 0),
                           f.value("model_failures", 0));
  std::cout << fmt::format("requests {}, responses {}\n", s.value("requests", 0),
                           s.value("responses", 0));
  for (const char* t : {"methods", "statuses", "rejections"})
    if (s.contains(t)) print_table(t, s[t]);
}

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
  if (a.json) {
    std::cout << (command == "stats" && r.contains("stats") ? r["stats"] : r).dump(2) << "\n";
  } else if (command == "stats" && ok && r.contains("stats")) {
    print_stats(r["stats"]);
  } else {
    if (r.contains("diagnostics"))
      for (const auto& d : r["diagnostics"]) std::cout << d.get<std::string>() << "\n";
    (ok ? std::cout : std::cerr) << r.value("message", ok ? "ok" : "failed") << "\n";
  }
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
    std::string name = s.name;
    sub->callback([args, name] { run(*args, name); });
  }
}

const CommandRegistration kRegistration{"opensm-plugin", &setup_opensm_plugin};

}  // namespace
}  // namespace rdmaqos::cli
