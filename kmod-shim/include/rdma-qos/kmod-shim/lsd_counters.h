// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Counters of rdma-qos-lsd: kernel requests by kind, answers by status (a path, or F_ERR and
// why), paths per SL, the answer latency, reloads, and the node path service's questions,
// answers, cache hits, SA requests, joined questions and connections. The threads that serve
// bump them (relaxed atomics, one increment each); the control thread reads a snapshot for
// `rdma-qos kernel stats`. They live as long as the process, so a reload does not reset them. Their
// metric families (rdma_qos_lsd_*) are declared once, in lsd_metric_table().
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/metrics.h"
#include "rdma-qos/common/result.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-client/path_service_wire.h"

namespace rdmaqos::kmod {

// Why a request got F_ERR (the kernel then asks the SA itself).
enum class FailReason : uint8_t {
  kMalformed,    // the request does not decode
  kSaError,      // the SA answered with an error, or no SA port could be opened
  kNoPath,       // the SA answered with no record
  kTimeout,      // no SA answer within the budget
  kUnencodable,  // the SA's record does not fit the kernel's reply
  kShutdown,     // the daemon stopped (or reloaded) with the request pending
};
inline constexpr size_t kFailReasons = 6;
// ErrorCode's values (rdma-qos/common/result.h), for counting the path service's errors.
inline constexpr size_t kErrorCodes = 8;
const char* fail_reason_name(FailReason r);
const char* path_use_name(PathUse u);

// Upper bounds (seconds) of the answer-latency buckets; the last bucket is +Inf. An answer
// costs one SA round trip (hundreds of microseconds on a quiet fabric) up to the whole budget
// of retries (seconds).
inline constexpr std::array<double, 14> kLsdLatencyBounds = {
    1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5};

// rdma-qos-lsd's metric families: the one list of what `rdma-qos kernel stats --format
// prometheus` shows.
const common::metrics::Table& lsd_metric_table();

class LsdCounters {
 public:
  LsdCounters() : started_(std::chrono::steady_clock::now()) {}

  // A RESOLVE request: its path_use, or malformed (nullopt).
  void request(std::optional<PathUse> use);
  // A reply carrying paths; `sl` is the SL of its first record.
  void answered(uint8_t sl);
  void failed(FailReason why);
  // From the decoded request to the reply or F_ERR sent.
  void latency(std::chrono::nanoseconds took);
  void reload(bool ok);

  // The node path service (path_service.h). A question by op, or malformed (nullopt).
  void path_question(std::optional<sa::path_service::Op> op);
  // An answer sent: records or a ClassPortInfo (nullopt), or the error's code.
  void path_answer(std::optional<ErrorCode> failed);
  // A question answered from the path cache (no SA request), or one that joined an identical
  // question already in flight (asked of the SA once for all of them).
  void path_cache_hit();
  void path_joined();
  // A MAD the path service sent to the SA (retries included), by attribute ID.
  void path_sa_request(uint16_t attr_id);
  // A connection accepted or refused (the service holds its maximum), and one closed.
  void path_connection(bool accepted);
  void path_connection_closed();

  // {"uptime_seconds", "requests": {kind: n}, "answers": {"path": n, "f_err": {reason: n}},
  //  "paths_by_sl": {"3": n}, "latency": {bounds_seconds, buckets, count, sum_seconds},
  //  "reloads": {"ok": n, "failed": n},
  //  "path_service": {"questions": {op: n}, "answers": {"answered": n, "failed": {code: n}},
  //                   "cache_hits": n, "joined": n, "sa_requests": {attribute: n},
  //                   "connections": {"open": n, "accepted": n, "refused": n}},
  //  "metrics": [the JSON form of metrics()]}
  nlohmann::json snapshot() const;
  // The same counters against lsd_metric_table().
  common::metrics::Snapshot metrics() const;

 private:
  using Counter = std::atomic<uint64_t>;
  static void bump(Counter& c, uint64_t by = 1) { c.fetch_add(by, std::memory_order_relaxed); }
  static uint64_t get(const Counter& c) { return c.load(std::memory_order_relaxed); }

  std::chrono::steady_clock::time_point started_;
  std::array<Counter, 3> requests_by_use_{};  // indexed by PathUse
  Counter malformed_{0};
  Counter paths_{0};
  std::array<Counter, kFailReasons> failures_{};
  std::array<Counter, 16> paths_by_sl_{};
  std::array<Counter, kLsdLatencyBounds.size() + 1> latency_buckets_{};
  Counter latency_count_{0}, latency_sum_ns_{0};
  Counter reloads_{0}, reload_failures_{0};
  // Indexed by Op - 1, then malformed.
  std::array<Counter, 4> path_questions_{};
  Counter path_answered_{0};
  std::array<Counter, kErrorCodes> path_failed_{};  // by ErrorCode
  Counter path_cache_hits_{0}, path_joined_{0};
  std::array<Counter, 4> path_sa_requests_{};  // PathRecord, MultiPathRecord, ClassPortInfo, other
  Counter path_accepted_{0}, path_refused_{0}, path_closed_{0};
};

}  // namespace rdmaqos::kmod
