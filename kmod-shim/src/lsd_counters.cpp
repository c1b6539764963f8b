// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters and their JSON snapshot (see lsd_counters.h).
#include "rdma-qos/kmod-shim/lsd_counters.h"

#include <algorithm>
#include <string>

namespace rdmaqos::kmod {

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
  return s;
}

}  // namespace rdmaqos::kmod
