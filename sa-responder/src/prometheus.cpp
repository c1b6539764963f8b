// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's stats reply as Prometheus metric families.
#include "rdma-qos/sa-responder/prometheus.h"

#include <vector>

#include "rdma-qos/common/json_fields.h"
#include "rdma-qos/common/prometheus.h"

namespace rdmaqos::sad {
namespace {

using common::json_number_field;
using common::json_object_field;
using common::Labels;
using common::PrometheusText;

}  // namespace

std::string prometheus_text(const nlohmann::json& stats) {
  const nlohmann::json& sa = json_object_field(stats, "sa");
  Labels daemon = {{"ca", sa.value("ca", "")}, {"port", std::to_string(sa.value("port", 0))}};
  PrometheusText p(daemon);

  p.family("rdma_qos_sad_info", "gauge", "The daemon answering at this port (value 1).");
  p.sample("rdma_qos_sad_info", {{"lid", std::to_string(sa.value("lid", 0))}}, 1);
  p.family("rdma_qos_sad_uptime_seconds", "gauge", "Seconds since the daemon began answering.");
  p.sample("rdma_qos_sad_uptime_seconds", {}, json_number_field(sa, "uptime_seconds"));

  p.family("rdma_qos_sad_requests_total", "counter", "SA requests by method and attribute.");
  for (const auto& [key, n] : json_object_field(stats, "methods").items()) {
    auto space = key.find(' ');
    p.sample("rdma_qos_sad_requests_total",
             {{"method", key.substr(0, space)},
              {"attribute", space == std::string::npos ? "" : key.substr(space + 1)}},
             n.get<double>());
  }
  p.family("rdma_qos_sad_responses_total", "counter", "SA responses by MAD status.");
  for (const auto& [status, n] : json_object_field(stats, "statuses").items())
    p.sample("rdma_qos_sad_responses_total", {{"status", status}}, n.get<double>());
  p.family("rdma_qos_sad_dropped_total", "counter",
           "Requests not answered: an untrusted SM_Key, a MAD that does not decode, a path "
           "query from a LID the fabric model does not know, a retry of a request still being "
           "answered.");
  for (const auto& [reason, n] : json_object_field(stats, "dropped").items())
    p.sample("rdma_qos_sad_dropped_total", {{"reason", reason}}, n.get<double>());
  if (stats.contains("mad_errors")) {
    p.family("rdma_qos_sad_mad_errors_total", "counter",
             "MADs the port failed to receive, or answers it refused to send.");
    for (const auto& [direction, n] : json_object_field(stats, "mad_errors").items())
      p.sample("rdma_qos_sad_mad_errors_total", {{"direction", direction}}, n.get<double>());
  }
  if (stats.contains("bounded")) {
    p.family("rdma_qos_sad_bounded_total", "counter",
             "Answers cut by a bound and answered ERR_NO_RESOURCES: records (a table longer "
             "than --max-records), time (still computed after --answer-time-limit).");
    for (const auto& [bound, n] : json_object_field(stats, "bounded").items())
      p.sample("rdma_qos_sad_bounded_total", {{"bound", bound}}, n.get<double>());
  }
  if (stats.contains("workers")) {
    const auto& w = stats["workers"];
    p.family("rdma_qos_sad_deferred_total", "counter",
             "Large answers computed on a worker thread, off the thread that answers the rest.");
    p.sample("rdma_qos_sad_deferred_total", {}, json_number_field(w, "deferred"));
    p.family("rdma_qos_sad_busy_total", "counter",
             "Large requests answered BUSY: every worker taken and the queue full.");
    p.sample("rdma_qos_sad_busy_total", {}, json_number_field(w, "busy"));
  }

  p.family("rdma_qos_sad_pairs_total", "counter",
           "Source-destination pairs by QoS level: answered with a record, or rejected.");
  for (const auto& [level, c] : json_object_field(stats, "levels").items()) {
    p.sample("rdma_qos_sad_pairs_total", {{"level", level}, {"result", "record"}},
             json_number_field(c, "records"));
    p.sample("rdma_qos_sad_pairs_total", {{"level", level}, {"result", "rejected"}},
             json_number_field(c, "rejected"));
  }
  p.family("rdma_qos_sad_rejections_total", "counter", "Pairs given no record, by reason.");
  for (const auto& [reason, n] : json_object_field(stats, "rejections").items())
    p.sample("rdma_qos_sad_rejections_total", {{"reason", reason}}, n.get<double>());

  if (stats.contains("latency")) {
    const auto& l = stats["latency"];
    p.family("rdma_qos_sad_answer_duration_seconds", "histogram",
             "Time from a decoded request to its computed answer.");
    p.histogram("rdma_qos_sad_answer_duration_seconds", {},
                l.value("bounds_seconds", std::vector<double>{}),
                l.value("buckets", std::vector<uint64_t>{}), json_number_field(l, "sum_seconds"));
  }

  if (stats.contains("policy")) {
    const auto& pol = stats["policy"];
    p.family("rdma_qos_sad_policy_rules", "gauge", "Match rules of the policy in force.");
    p.sample("rdma_qos_sad_policy_rules", {}, json_number_field(pol, "rules"));
    p.family("rdma_qos_sad_reloads_total", "counter", "Policy reloads, by result.");
    p.sample("rdma_qos_sad_reloads_total", {{"result", "ok"}}, json_number_field(pol, "reloads"));
    p.sample("rdma_qos_sad_reloads_total", {{"result", "failed"}},
             json_number_field(pol, "reload_failures"));
  }
  if (stats.contains("fabric")) {
    const auto& f = stats["fabric"];
    p.family("rdma_qos_sad_fabric_endpoints", "gauge", "Endpoints of the fabric model in force.");
    p.sample("rdma_qos_sad_fabric_endpoints", {}, json_number_field(f, "endpoints"));
    p.family("rdma_qos_sad_discoveries_total", "counter", "Fabric discoveries, by result.");
    p.sample("rdma_qos_sad_discoveries_total", {{"result", "ok"}},
             json_number_field(f, "discoveries"));
    p.sample("rdma_qos_sad_discoveries_total", {{"result", "failed"}},
             json_number_field(f, "discovery_failures"));
  }
  return p.text();
}

}  // namespace rdmaqos::sad
