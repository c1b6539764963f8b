// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters, their metric table, and their JSON snapshot (see lsd_counters.h).
#include "rdma-qos/kmod-shim/lsd_counters.h"

#include <algorithm>
#include <string>
#include <vector>

namespace rdmaqos::kmod {

using common::metrics::Type;

const common::metrics::Table& lsd_metric_table() {
  static const common::metrics::Table table(
      "rdma_qos_lsd_", {},
      {
          {"uptime_seconds", Type::kGauge, "Seconds since rdma-qos-lsd started."},
          {"requests_total",
           Type::kCounter,
           "Path queries from the kernel, by path_use (all, unidirectional, gmp) or malformed.",
           {"kind"}},
          {"answers_total",
           Type::kCounter,
           "Answers to the kernel: a path, or F_ERR (the kernel asks the SA itself) by reason.",
           {"status", "reason"}},
          {"paths_total",
           Type::kCounter,
           "Answers with a path, by the SL (QoS level) of the path the SA chose.",
           {"sl"}},
          {"answer_duration_seconds", Type::kHistogram,
           "Time from a decoded kernel request to its answer (a path or F_ERR)."},
          {"reloads_total",
           Type::kCounter,
           "Reloads of rdma-qos.conf (SIGHUP), by result.",
           {"result"}},
      });
  return table;
}

const char* fail_reason_name(FailReason r) {
  switch (r) {
    case FailReason::kMalformed: return "malformed";
    case FailReason::kSaError: return "sa_error";
    case FailReason::kNoPath: return "no_path";
    case FailReason::kTimeout: return "timeout";
    case FailReason::kUnencodable: return "unencodable";
    case FailReason::kShutdown: return "shutdown";
  }
  return "unknown";
}

const char* path_use_name(PathUse u) {
  switch (u) {
    case PathUse::kAll: return "all";
    case PathUse::kUnidirectional: return "unidirectional";
    case PathUse::kGmp: return "gmp";
  }
  return "unknown";
}

void LsdCounters::request(std::optional<PathUse> use) {
  const auto i = use ? static_cast<size_t>(*use) : requests_by_use_.size();
  bump(i < requests_by_use_.size() ? requests_by_use_[i] : malformed_);
}

void LsdCounters::answered(uint8_t sl) {
  bump(paths_);
  bump(paths_by_sl_[sl & 0xF]);
}

void LsdCounters::failed(FailReason why) {
  bump(failures_[static_cast<size_t>(why)]);
}

void LsdCounters::latency(std::chrono::nanoseconds took) {
  const double seconds = std::chrono::duration<double>(took).count();
  const auto bucket = static_cast<size_t>(
      std::lower_bound(kLsdLatencyBounds.begin(), kLsdLatencyBounds.end(), seconds) -
      kLsdLatencyBounds.begin());
  bump(latency_buckets_[bucket]);
  bump(latency_count_);
  bump(latency_sum_ns_, static_cast<uint64_t>(std::max<int64_t>(took.count(), 0)));
}

void LsdCounters::reload(bool ok) {
  bump(ok ? reloads_ : reload_failures_);
}

nlohmann::json LsdCounters::snapshot() const {
  nlohmann::json s;
  s["uptime_seconds"] =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count();
  nlohmann::json requests = nlohmann::json::object();
  for (PathUse u : {PathUse::kAll, PathUse::kUnidirectional, PathUse::kGmp})
    requests[path_use_name(u)] = get(requests_by_use_[static_cast<size_t>(u)]);
  requests["malformed"] = get(malformed_);
  s["requests"] = std::move(requests);
  nlohmann::json f_err = nlohmann::json::object();
  for (size_t i = 0; i < kFailReasons; ++i)
    f_err[fail_reason_name(static_cast<FailReason>(i))] = get(failures_[i]);
  s["answers"] = {{"path", get(paths_)}, {"f_err", std::move(f_err)}};
  // Only the SLs that were answered: sixteen zero lines help no one.
  nlohmann::json by_sl = nlohmann::json::object();
  for (size_t sl = 0; sl < paths_by_sl_.size(); ++sl)
    if (uint64_t n = get(paths_by_sl_[sl])) by_sl[std::to_string(sl)] = n;
  s["paths_by_sl"] = std::move(by_sl);
  std::vector<uint64_t> buckets;
  for (const auto& b : latency_buckets_) buckets.push_back(get(b));
  s["latency"] = {{"bounds_seconds", kLsdLatencyBounds},
                  {"buckets", buckets},
                  {"count", get(latency_count_)},
                  {"sum_seconds", static_cast<double>(get(latency_sum_ns_)) * 1e-9}};
  s["reloads"] = {{"ok", get(reloads_)}, {"failed", get(reload_failures_)}};
  s["metrics"] = common::metrics::to_json(metrics());
  return s;
}

common::metrics::Snapshot LsdCounters::metrics() const {
  common::metrics::Snapshot m(lsd_metric_table());
  m.add("uptime_seconds", {},
        static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::steady_clock::now() - started_)
                                .count()));
  for (PathUse u : {PathUse::kAll, PathUse::kUnidirectional, PathUse::kGmp})
    m.add("requests_total", {path_use_name(u)},
          static_cast<double>(get(requests_by_use_[static_cast<size_t>(u)])));
  m.add("requests_total", {"malformed"}, static_cast<double>(get(malformed_)));
  m.add("answers_total", {"path", ""}, static_cast<double>(get(paths_)));
  for (size_t i = 0; i < kFailReasons; ++i)
    m.add("answers_total", {"f_err", fail_reason_name(static_cast<FailReason>(i))},
          static_cast<double>(get(failures_[i])));
  for (size_t sl = 0; sl < paths_by_sl_.size(); ++sl)
    if (uint64_t n = get(paths_by_sl_[sl]))
      m.add("paths_total", {std::to_string(sl)}, static_cast<double>(n));
  std::vector<uint64_t> buckets;
  for (const auto& b : latency_buckets_) buckets.push_back(get(b));
  m.histogram("answer_duration_seconds", {}, {kLsdLatencyBounds.begin(), kLsdLatencyBounds.end()},
              std::move(buckets), static_cast<double>(get(latency_sum_ns_)) * 1e-9);
  m.add("reloads_total", {"ok"}, static_cast<double>(get(reloads_)));
  m.add("reloads_total", {"failed"}, static_cast<double>(get(reload_failures_)));
  return m;
}

}  // namespace rdmaqos::kmod
