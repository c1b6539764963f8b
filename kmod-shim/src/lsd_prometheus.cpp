// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's stats reply as Prometheus metric families.
#include "rdma-qos/kmod-shim/lsd_prometheus.h"

#include <vector>

#include "rdma-qos/common/prometheus.h"

namespace rdmaqos::kmod {
namespace {

const nlohmann::json& object(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return j.contains(key) && j[key].is_object() ? j[key] : kEmpty;
}

double num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

double num(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : 0;
}

}  // namespace

std::string lsd_prometheus_text(const nlohmann::json& stats) {
  common::PrometheusText p;
  p.family("rdma_qos_lsd_uptime_seconds", "gauge", "Seconds since rdma-qos-lsd started.");
  p.sample("rdma_qos_lsd_uptime_seconds", {}, num(stats, "uptime_seconds"));

  p.family("rdma_qos_lsd_requests_total", "counter",
           "Path queries from the kernel, by path_use (all, unidirectional, gmp) or malformed.");
  for (const auto& [kind, n] : object(stats, "requests").items())
    p.sample("rdma_qos_lsd_requests_total", {{"kind", kind}}, num(n));

  const nlohmann::json& answers = object(stats, "answers");
  p.family("rdma_qos_lsd_answers_total", "counter",
           "Answers to the kernel: a path, or F_ERR (the kernel asks the SA itself) by reason.");
  p.sample("rdma_qos_lsd_answers_total", {{"status", "path"}, {"reason", ""}},
           num(answers, "path"));
  for (const auto& [reason, n] : object(answers, "f_err").items())
    p.sample("rdma_qos_lsd_answers_total", {{"status", "f_err"}, {"reason", reason}}, num(n));

  p.family("rdma_qos_lsd_paths_total", "counter",
           "Answers with a path, by the SL (QoS level) of the path the SA chose.");
  for (const auto& [sl, n] : object(stats, "paths_by_sl").items())
    p.sample("rdma_qos_lsd_paths_total", {{"sl", sl}}, num(n));

  if (stats.contains("latency")) {
    const auto& l = stats["latency"];
    p.family("rdma_qos_lsd_answer_duration_seconds", "histogram",
             "Time from a decoded kernel request to its answer (a path or F_ERR).");
    p.histogram("rdma_qos_lsd_answer_duration_seconds", {},
                l.value("bounds_seconds", std::vector<double>{}),
                l.value("buckets", std::vector<uint64_t>{}), num(l, "sum_seconds"));
  }
  if (stats.contains("reloads")) {
    const auto& r = object(stats, "reloads");
    p.family("rdma_qos_lsd_reloads_total", "counter",
             "Reloads of rdma-qos.conf (SIGHUP), by result.");
    p.sample("rdma_qos_lsd_reloads_total", {{"result", "ok"}}, num(r, "ok"));
    p.sample("rdma_qos_lsd_reloads_total", {{"result", "failed"}}, num(r, "failed"));
  }
  return p.text();
}

}  // namespace rdmaqos::kmod
