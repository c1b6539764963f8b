// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's stats as Prometheus families: rdma-qos-sad's answer families under the prefix
// rdma_qos_opensm_plugin_ (so one dashboard reads both), labelled with OpenSM's pid instead of
// a CA and port, plus what only the plugin has. Every plain number of the stats is a row of one
// of the two tables below, so a counter added to the plugin's stats is exported by adding a row
// (the plugin's unit tests fail until it is); only the shapes of their own (the methods, the
// levels, the latency histogram) are written out by hand.
#include "plugin_prometheus.h"

#include <array>
#include <string_view>
#include <vector>

#include "rdma-qos/common/json_fields.h"
#include "rdma-qos/common/prometheus.h"

namespace rdmaqos::cli {
namespace {

using common::json_number_field;
using common::json_object_field;
using common::Labels;

// One number of the stats (`group`.`key`; `group` "" at the top level) as one sample of a
// family; consecutive rows of the same family share its HELP and TYPE lines.
struct Scalar {
  const char* group;
  const char* key;
  const char* family;  // after the prefix
  const char* type;
  const char* help;
  const char* label_name = nullptr;  // the sample's one label, if any
  const char* label_value = nullptr;
};

constexpr std::array kScalars{
    Scalar{"plugin", "uptime_seconds", "uptime_seconds", "gauge",
           "Seconds since the plugin was loaded."},
    Scalar{"plugin", "fallbacks", "fallbacks_total", "counter",
           "Requests handed to OpenSM's own handler (no model yet, an unknown requester, a MAD "
           "that does not decode)."},
    Scalar{"", "requests", "requests_received_total", "counter",
           "SA requests the plugin took, all methods and attributes."},
    Scalar{"", "responses", "responses_sent_total", "counter",
           "SA responses the plugin sent, all statuses."},
    Scalar{"workers", "deferred", "deferred_total", "counter",
           "Large answers computed on a worker thread (rdma-qos-sad's; the plugin answers on "
           "OpenSM's threads)."},
    Scalar{"workers", "busy", "busy_total", "counter",
           "Large requests answered BUSY (rdma-qos-sad's; the plugin has no worker queue)."},
    Scalar{"policy", "rules", "policy_rules", "gauge", "Match rules of the policy in force."},
    Scalar{"policy", "reloads", "reloads_total", "counter", "Policy reloads, by result.", "result",
           "ok"},
    Scalar{"policy", "reload_failures", "reloads_total", "counter", "", "result", "failed"},
    Scalar{"policy", "reads", "policy_file_reads_total", "counter",
           "Reads of the policy and partitions files (only when they changed, or for a "
           "reload)."},
    Scalar{"policy", "parses", "policy_parses_total", "counter",
           "Parses of the policy text, shared by the answers and the qos-setup scopes."},
    Scalar{"policy", "compiles", "policy_compilations_total", "counter",
           "Policy compilations at a model rebuild or reload, and rebuilds that kept the "
           "compiled policy because nothing it reads had changed.",
           "result", "compiled"},
    Scalar{"policy", "compiles_skipped", "policy_compilations_total", "counter", "", "result",
           "kept"},
    Scalar{"qos_setup", "heavy_sweeps", "qos_setup_heavy_sweeps_total", "counter",
           "OpenSM heavy sweeps whose QoS setup looked at the policy."},
    Scalar{"qos_setup", "builds", "qos_setup_builds_total", "counter",
           "SL2VL and VLArb scopes built (a new policy text or new partitions)."},
    Scalar{"qos_setup", "scopes", "qos_setup_scopes", "gauge", "SL2VL and VLArb scopes in force."},
    Scalar{"fabric", "endpoints", "fabric_endpoints", "gauge",
           "Endpoints of the fabric model in force."},
    Scalar{"fabric", "models", "models_total", "counter",
           "Models built from OpenSM's subnet, by result.", "result", "ok"},
    Scalar{"fabric", "model_failures", "models_total", "counter", "", "result", "failed"},
    Scalar{"fabric", "snapshot_seconds", "snapshot_seconds", "gauge",
           "Seconds the last copy of OpenSM's subnet held OpenSM's lock (read side; a sweep "
           "waits for it)."},
    Scalar{"fabric", "snapshot_seconds_max", "snapshot_seconds_max", "gauge",
           "The longest such copy since the plugin was loaded."},
};

// An object of the stats whose every key is a label value of one family.
struct Keyed {
  const char* group;
  const char* family;
  const char* label_name;
  const char* help;
};

constexpr std::array kKeyed{
    Keyed{"statuses", "responses_total", "status", "SA responses by MAD status."},
    Keyed{"dropped", "dropped_total", "reason",
          "Requests not answered: an untrusted SM_Key, a path query from a LID the model does "
          "not know, a retry of a request still being answered."},
    Keyed{"mad_errors", "mad_errors_total", "direction",
          "MADs that failed to arrive or to leave (rdma-qos-sad's; OpenSM moves the plugin's "
          "MADs)."},
    Keyed{"bounded", "bounded_total", "bound",
          "Answers cut by a bound and answered ERR_NO_RESOURCES: records (a table longer than "
          "max-records), time (still computed after answer-time-limit)."},
    Keyed{"rejections", "rejections_total", "reason", "Pairs given no record, by reason."},
    Keyed{"fallback_reasons", "fallbacks_by_reason_total", "reason",
          "Requests handed to OpenSM's own handler, by reason: no_model (none yet, or none of "
          "the current subnet can be built), qos_off, paused, undecodable, unknown_requester, "
          "multipath_routing_sl (a MultiPathRecord where the routing engine assigns SLs), "
          "multicast (a PathRecord to a group, answered from OpenSM's live groups), "
          "unknown_port (a GID the model lacks: an alias GUID, a new port), no_pkey_table (an "
          "endpoint whose P_Key table is not read yet), aliased_port (a path query that may "
          "touch a port with alias GUIDs), failed."},
};

std::string name(std::string_view suffix) {
  return "rdma_qos_opensm_plugin_" + std::string(suffix);
}

}  // namespace

std::string plugin_prometheus_text(const nlohmann::json& stats) {
  const nlohmann::json& plugin = json_object_field(stats, "plugin");
  common::PrometheusText p;
  p.family(name("info"), "gauge", "The plugin loaded into this OpenSM (value 1).");
  p.sample(name("info"), {{"opensm_pid", std::to_string(plugin.value("pid", 0))}}, 1);
  p.family(name("answering"), "gauge",
           "1 while the plugin answers PathRecord and MultiPathRecord, 0 while OpenSM's own "
           "handlers do.");
  p.sample(name("answering"), {}, plugin.value("answering", false) ? 1 : 0);
  if (const nlohmann::json& routing = json_object_field(stats, "routing"); !routing.empty()) {
    p.family(name("routing_info"), "gauge",
             "The routing engine OpenSM used (value 1): whether it assigns path SLs, and whether "
             "the policy's qos-setup tables apply under it.");
    p.sample(name("routing_info"),
             {{"engine", routing.value("engine", "")},
              {"assigns_sl", routing.value("assigns_sl", false) ? "1" : "0"},
              {"qos_setup_applied", routing.value("qos_setup_applied", true) ? "1" : "0"}},
             1);
  }

  std::string_view family;
  for (const Scalar& s : kScalars) {
    if (s.family != family) p.family(name(s.family), s.type, s.help);
    family = s.family;
    Labels labels;
    if (s.label_name != nullptr) labels.emplace_back(s.label_name, s.label_value);
    const nlohmann::json& in = *s.group == '\0' ? stats : json_object_field(stats, s.group);
    p.sample(name(s.family), labels, json_number_field(in, s.key));
  }
  for (const Keyed& k : kKeyed) {
    p.family(name(k.family), "counter", k.help);
    for (const auto& [label, n] : json_object_field(stats, k.group).items())
      p.sample(name(k.family), {{k.label_name, label}}, n.is_number() ? n.get<double>() : 0);
  }

  p.family(name("requests_total"), "counter", "SA requests by method and attribute.");
  for (const auto& [key, n] : json_object_field(stats, "methods").items()) {
    auto space = key.find(' ');
    p.sample(name("requests_total"),
             {{"method", key.substr(0, space)},
              {"attribute", space == std::string::npos ? "" : key.substr(space + 1)}},
             n.get<double>());
  }
  p.family(name("pairs_total"), "counter",
           "Source-destination pairs by QoS level: answered with a record, or rejected.");
  for (const auto& [level, c] : json_object_field(stats, "levels").items()) {
    p.sample(name("pairs_total"), {{"level", level}, {"result", "record"}},
             json_number_field(c, "records"));
    p.sample(name("pairs_total"), {{"level", level}, {"result", "rejected"}},
             json_number_field(c, "rejected"));
  }
  if (stats.contains("latency")) {
    const auto& l = stats["latency"];
    p.family(name("answer_duration_seconds"), "histogram",
             "Time from a decoded request to its computed answer.");
    p.histogram(name("answer_duration_seconds"), {},
                l.value("bounds_seconds", std::vector<double>{}),
                l.value("buckets", std::vector<uint64_t>{}), json_number_field(l, "sum_seconds"));
  }
  return p.text();
}

}  // namespace rdmaqos::cli
