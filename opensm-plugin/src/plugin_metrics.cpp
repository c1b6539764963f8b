// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The OpenSM plugin's metric families, declared once: rdma-qos-sad's answer families under the
// prefix rdma_qos_opensm_plugin_ (so one dashboard reads both; add_answer_samples fills them),
// with OpenSM's pid instead of a CA and port, and what only the plugin has (fallbacks to
// OpenSM's handlers, the policy source's reads and parses, compilations, the qos-setup hooks,
// the models built from OpenSM's subnet). `rdma-qos opensm-plugin stats --format prometheus`
// renders the snapshot Engine::metrics() fills against this table.
#include <unistd.h>

#include <chrono>
#include <string>

#include "rdma-qos/opensm-plugin/engine.h"

namespace rdmaqos::osmp {

using common::metrics::Type;

const common::metrics::Table& plugin_metric_table() {
  static const common::metrics::Table table(
      "rdma_qos_opensm_plugin_", {},
      {
          {"info", Type::kGauge, "The plugin loaded into this OpenSM (value 1).", {"opensm_pid"}},
          {"answering", Type::kGauge,
           "1 while the plugin answers PathRecord and MultiPathRecord, 0 while OpenSM's own "
           "handlers do."},
          {"routing_info",
           Type::kGauge,
           "The routing engine OpenSM used (value 1): whether it assigns path SLs, whether it "
           "programs SL2VL and VLArb tables itself, and whether the policy's qos-setup tables "
           "apply under it.",
           {"engine", "assigns_sl", "programs_sl2vl", "qos_setup_applied"}},
          {"handed_to_opensm_info",
           Type::kGauge,
           "Present (value 1) while OpenSM's own handlers answer every path query, labelled "
           "with why: qos FALSE, paused, no model of the current subnet, a policy or "
           "partitions with errors.",
           {"reason"}},
          {"uptime_seconds", Type::kGauge, "Seconds since the plugin was loaded."},
          {"fallbacks_total", Type::kCounter,
           "Requests handed to OpenSM's own handler (no model yet, an unknown requester, a MAD "
           "that does not decode)."},
          {"requests_received_total", Type::kCounter,
           "SA requests the plugin took, all methods and attributes."},
          {"responses_sent_total", Type::kCounter, "SA responses the plugin sent, all statuses."},
          {"deferred_total", Type::kCounter,
           "Large answers computed on one of the plugin's answer threads instead of OpenSM's "
           "dispatcher thread (answer-threads)."},
          {"busy_total", Type::kCounter,
           "Large requests answered BUSY: every answer thread taken and their queue full."},
          {"policy_rules", Type::kGauge, "Match rules of the policy in force."},
          {"reloads_total", Type::kCounter, "Policy reloads, by result.", {"result"}},
          {"policy_file_reads_total", Type::kCounter,
           "Reads of the policy and partitions files (only when they changed, or for a "
           "reload)."},
          {"policy_parses_total", Type::kCounter,
           "Parses of the policy text, shared by the answers and the qos-setup scopes."},
          {"policy_compilations_total",
           Type::kCounter,
           "Policy compilations at a model rebuild or reload, and rebuilds that kept the "
           "compiled policy because nothing it reads had changed.",
           {"result"}},
          {"qos_setup_heavy_sweeps_total", Type::kCounter,
           "OpenSM heavy sweeps whose QoS setup looked at the policy."},
          {"qos_setup_builds_total", Type::kCounter,
           "SL2VL and VLArb scopes built (a new policy text or new partitions)."},
          {"qos_setup_scopes", Type::kGauge, "SL2VL and VLArb scopes in force."},
          {"fabric_endpoints", Type::kGauge, "Endpoints of the fabric model in force."},
          {"models_total",
           Type::kCounter,
           "Models built from OpenSM's subnet, by result.",
           {"result"}},
          {"snapshot_seconds", Type::kGauge,
           "Seconds the last copy of OpenSM's subnet held OpenSM's lock (read side; a sweep "
           "waits for it)."},
          {"snapshot_seconds_max", Type::kGauge,
           "The longest such copy since the plugin was loaded."},
          {"responses_total", Type::kCounter, "SA responses by MAD status.", {"status"}},
          {"dropped_total",
           Type::kCounter,
           "Requests not answered: an untrusted SM_Key, a path query from a LID the model does "
           "not know, a retry of a request still being answered.",
           {"reason"}},
          {"mad_errors_total",
           Type::kCounter,
           "MADs that failed to arrive or to leave (rdma-qos-sad's; OpenSM moves the plugin's "
           "MADs).",
           {"direction"}},
          {"bounded_total",
           Type::kCounter,
           "Answers cut by a bound and answered ERR_NO_RESOURCES: records (a table longer than "
           "max-records), time (still computed after answer-time-limit).",
           {"bound"}},
          {"rejections_total", Type::kCounter, "Pairs given no record, by reason.", {"reason"}},
          {"fallbacks_by_reason_total",
           Type::kCounter,
           "Requests handed to OpenSM's own handler, by reason: no_model (none yet, or none of "
           "the current subnet can be built), qos_off, paused, undecodable, unknown_requester, "
           "multipath_routing_sl (a MultiPathRecord where the routing engine assigns SLs), "
           "multicast (a PathRecord to a group, answered from OpenSM's live groups), "
           "unknown_port (a GID the model lacks: an alias GUID, a new port), no_pkey_table (an "
           "endpoint whose P_Key table is not read yet), aliased_port (a path query that may "
           "touch a port with alias GUIDs), inactive_port (a path query that may touch a port or "
           "link not yet Active), failed.",
           {"reason"}},
          {"requests_total",
           Type::kCounter,
           "SA requests by method and attribute.",
           {"method", "attribute"}},
          {"pairs_total",
           Type::kCounter,
           "Source-destination pairs by QoS level: answered with a record, or rejected.",
           {"level", "result"}},
          {"answer_duration_seconds", Type::kHistogram,
           "Time from a decoded request to its computed answer."},
      });
  return table;
}

common::metrics::Snapshot Engine::metrics() const {
  return metrics(service_.counters().snapshot());
}

common::metrics::Snapshot Engine::metrics(const sad::CounterSnapshot& counts) const {
  common::metrics::Snapshot m(plugin_metric_table());
  auto n = [](uint64_t v) { return static_cast<double>(v); };
  auto now = service_.current();
  m.add("info", {std::to_string(getpid())}, 1);
  m.add("answering", {}, now != nullptr && osm_.qos && !paused_ ? 1 : 0);
  if (auto routing = routing_.load())
    m.add("routing_info",
          {routing->engine, routing->assigns_sl ? "1" : "0", routing->programs_sl2vl ? "1" : "0",
           engine_keeps_own_tables(*routing) ? "0" : "1"},
          1);
  if (const nlohmann::json why = handover_reason(now != nullptr); why.is_string())
    m.add("handed_to_opensm_info", {why.get<std::string>()}, 1);
  m.add("uptime_seconds", {},
        static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::steady_clock::now() - started_)
                                .count()));
  m.add("fallbacks_total", {}, n(fallbacks_.load()));
  m.add("requests_received_total", {}, n(counts.requests));
  m.add("responses_sent_total", {}, n(counts.responses));
  m.add("policy_rules", {}, n(now && now->policy ? now->policy->rules().size() : 0));
  m.add("reloads_total", {"ok"}, n(reloads_.load()));
  m.add("reloads_total", {"failed"}, n(reload_failures_.load()));
  m.add("policy_file_reads_total", {}, n(source_->reads()));
  m.add("policy_parses_total", {}, n(source_->parses()));
  m.add("policy_compilations_total", {"compiled"}, n(compiles_.load()));
  m.add("policy_compilations_total", {"kept"}, n(compiles_skipped_.load()));
  m.add("qos_setup_heavy_sweeps_total", {}, n(qos_setup_.heavy_sweeps.load()));
  m.add("qos_setup_builds_total", {}, n(qos_setup_.builds.load()));
  m.add("qos_setup_scopes", {}, n(qos_setup_.scopes.load()));
  m.add("fabric_endpoints", {}, n(now ? now->model->endpoints().size() : 0));
  m.add("models_total", {"ok"}, n(models_.load()));
  m.add("models_total", {"failed"}, n(model_failures_.load()));
  m.add("snapshot_seconds", {}, static_cast<double>(snapshot_ns_last_.load()) / 1e9);
  m.add("snapshot_seconds_max", {}, static_cast<double>(snapshot_ns_max_.load()) / 1e9);
  for (size_t i = 0; i < fallback_reasons_.size(); ++i) {
    if (uint64_t count = fallback_reasons_[i].load())
      m.add("fallbacks_by_reason_total", {fallback_name(static_cast<Fallback>(i))}, n(count));
  }
  sad::add_answer_samples(counts, m);
  return m;
}

}  // namespace rdmaqos::osmp
