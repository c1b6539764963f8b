// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos opensm-plugin reload|rediscover|stats|explain`: operates the rdma-qos OpenSM plugin
// inside a running OpenSM through its control socket (the protocol of rdma-qos-sad's).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <vector>

#include "cmd_explain.h"
#include "command.h"
#include "control_reply.h"
#include "rdma-qos/common/prometheus.h"
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

const nlohmann::json& object(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return j.contains(key) && j[key].is_object() ? j[key] : kEmpty;
}

double num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

// The plugin's stats as Prometheus families: rdma-qos-sad's answer families under the prefix
// rdma_qos_opensm_plugin_ (so one dashboard reads both), labelled with OpenSM's pid instead of
// a CA and port, plus what only the plugin has (fallbacks to OpenSM, models, compilations).
std::string plugin_prometheus_text(const nlohmann::json& stats) {
  const nlohmann::json& plugin = object(stats, "plugin");
  common::PrometheusText p;
  auto name = [](const char* suffix) { return std::string("rdma_qos_opensm_plugin_") + suffix; };

  p.family(name("info"), "gauge", "The plugin loaded into this OpenSM (value 1).");
  p.sample(name("info"), {{"opensm_pid", std::to_string(plugin.value("pid", 0))}}, 1);
  p.family(name("answering"), "gauge",
           "1 while the plugin answers PathRecord and MultiPathRecord, 0 while OpenSM's own "
           "handlers do.");
  p.sample(name("answering"), {}, plugin.value("answering", false) ? 1 : 0);
  p.family(name("uptime_seconds"), "gauge", "Seconds since the plugin was loaded.");
  p.sample(name("uptime_seconds"), {}, num(plugin, "uptime_seconds"));
  p.family(name("fallbacks_total"), "counter",
           "Requests handed to OpenSM's own handler (no model yet, an unknown requester, a MAD "
           "that does not decode).");
  p.sample(name("fallbacks_total"), {}, num(plugin, "fallbacks"));

  p.family(name("requests_total"), "counter", "SA requests by method and attribute.");
  for (const auto& [key, n] : object(stats, "methods").items()) {
    auto space = key.find(' ');
    p.sample(name("requests_total"),
             {{"method", key.substr(0, space)},
              {"attribute", space == std::string::npos ? "" : key.substr(space + 1)}},
             n.get<double>());
  }
  p.family(name("responses_total"), "counter", "SA responses by MAD status.");
  for (const auto& [status, n] : object(stats, "statuses").items())
    p.sample(name("responses_total"), {{"status", status}}, n.get<double>());
  p.family(name("dropped_total"), "counter", "Requests not answered, by reason.");
  for (const auto& [reason, n] : object(stats, "dropped").items())
    p.sample(name("dropped_total"), {{"reason", reason}}, n.get<double>());

  p.family(name("pairs_total"), "counter",
           "Source-destination pairs by QoS level: answered with a record, or rejected.");
  for (const auto& [level, c] : object(stats, "levels").items()) {
    p.sample(name("pairs_total"), {{"level", level}, {"result", "record"}}, num(c, "records"));
    p.sample(name("pairs_total"), {{"level", level}, {"result", "rejected"}}, num(c, "rejected"));
  }
  p.family(name("rejections_total"), "counter", "Pairs given no record, by reason.");
  for (const auto& [reason, n] : object(stats, "rejections").items())
    p.sample(name("rejections_total"), {{"reason", reason}}, n.get<double>());

  if (stats.contains("latency")) {
    const auto& l = stats["latency"];
    p.family(name("answer_duration_seconds"), "histogram",
             "Time from a decoded request to its computed answer.");
    p.histogram(name("answer_duration_seconds"), {},
                l.value("bounds_seconds", std::vector<double>{}),
                l.value("buckets", std::vector<uint64_t>{}), num(l, "sum_seconds"));
  }
  const nlohmann::json& pol = object(stats, "policy");
  p.family(name("policy_rules"), "gauge", "Match rules of the policy in force.");
  p.sample(name("policy_rules"), {}, num(pol, "rules"));
  p.family(name("reloads_total"), "counter", "Policy reloads, by result.");
  p.sample(name("reloads_total"), {{"result", "ok"}}, num(pol, "reloads"));
  p.sample(name("reloads_total"), {{"result", "failed"}}, num(pol, "reload_failures"));
  p.family(name("policy_compilations_total"), "counter",
           "Policy compilations at a model rebuild or reload, and rebuilds that kept the "
           "compiled policy because nothing it reads had changed.");
  p.sample(name("policy_compilations_total"), {{"result", "compiled"}}, num(pol, "compiles"));
  p.sample(name("policy_compilations_total"), {{"result", "kept"}}, num(pol, "compiles_skipped"));
  const nlohmann::json& fabric = object(stats, "fabric");
  p.family(name("fabric_endpoints"), "gauge", "Endpoints of the fabric model in force.");
  p.sample(name("fabric_endpoints"), {}, num(fabric, "endpoints"));
  p.family(name("models_total"), "counter", "Models built from OpenSM's subnet, by result.");
  p.sample(name("models_total"), {{"result", "ok"}}, num(fabric, "models"));
  p.sample(name("models_total"), {{"result", "failed"}}, num(fabric, "model_failures"));
  return p.text();
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
