// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How `rdma-qos sad` and `rdma-qos opensm-plugin` show a control-socket reply: both speak the
// same protocol, and the plugin's stats are the daemon's counters with a "plugin" object.
#include "control_reply.h"

#include <fmt/format.h>

#include <iostream>

#include "rdma-qos/common/metrics.h"

namespace rdmaqos::cli {

// The object under `key`, or an empty one: the OpenSM plugin's stats have the same counters
// but a "plugin" object instead of "sa", and fabric models instead of discoveries.
namespace {

const nlohmann::json& part(const nlohmann::json& s, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = s.find(key);
  return it != s.end() && it->is_object() ? *it : kEmpty;
}

}  // namespace

void print_stats(const nlohmann::json& s) {
  if (const auto& plugin = part(s, "plugin"); !plugin.empty()) {
    std::cout << fmt::format("OpenSM plugin in pid {}, {}, {} queries left to OpenSM, up {} s\n",
                             plugin.value("pid", 0),
                             plugin.value("answering", false) ? "answering" : "not answering",
                             plugin.value("fallbacks", 0), plugin.value("uptime_seconds", 0));
    if (auto why = plugin.find("handed_to_opensm"); why != plugin.end() && why->is_string())
      std::cout << "OpenSM's own handlers answer: " << why->get<std::string>() << "\n";
    if (const auto& r = part(s, "routing"); !r.empty()) {
      std::cout << fmt::format("routing engine: {}{}{}\n", r.value("engine", "?"),
                               r.value("assigns_sl", false) ? ", assigns path SLs" : "",
                               r.value("qos_setup_applied", true)
                                   ? ""
                                   : "; qos-setup not applied (OpenSM's own SL2VL and VLArb)");
    }
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
  if (const auto& bounded = part(s, "bounded"); !bounded.empty()) {
    const auto& workers = part(s, "workers");
    std::cout << fmt::format(
        "bounded work: {} cut by --max-records, {} by --answer-time-limit; {} answered on "
        "workers, {} refused BUSY, {} retries dropped\n",
        bounded.value("records", 0), bounded.value("time", 0), workers.value("deferred", 0),
        workers.value("busy", 0), dropped.value("duplicate", 0));
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
  table("queries left to OpenSM's handlers", part(s, "fallback_reasons"));
}

bool print_prometheus(const nlohmann::json& stats, const std::string& program) {
  auto it = stats.find("metrics");
  auto text = common::metrics::prometheus_text(it == stats.end() ? nlohmann::json() : *it);
  if (!text) {
    std::cerr << fmt::format("{}: {}\n", program, text.error().message);
    return false;
  }
  std::cout << *text;
  return true;
}

void show_control_reply(const nlohmann::json& r, const std::string& command, bool json) {
  const bool ok = r.value("ok", false);
  if (json) {
    std::cout << (command == "stats" && r.contains("stats") ? r["stats"] : r).dump(2) << "\n";
  } else if (command == "stats" && ok && r.contains("stats")) {
    print_stats(r["stats"]);
  } else {
    if (r.contains("diagnostics"))
      for (const auto& d : r["diagnostics"]) std::cout << d.get<std::string>() << "\n";
    (ok ? std::cout : std::cerr) << r.value("message", ok ? "ok" : "failed") << "\n";
  }
}

}  // namespace rdmaqos::cli
