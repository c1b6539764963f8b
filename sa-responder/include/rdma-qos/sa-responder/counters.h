// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Counters of the SA daemon: requests per method and attribute, answers per MAD status, pairs
// per QoS level and rejection reason, dropped requests, MADs the port failed. Relaxed atomics
// bumped on the answer path (one increment each); a snapshot is what `rdma-qos sad stats` shows.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/metrics.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-responder/answer.h"

namespace rdmaqos::sad {

// The name `stats` shows for a rejection ("no_route", "sl_dropped", ...).
const char* rejection_name(Rejection r);
// "Get", "GetTable", ... or "0xNN" for other methods; "PathRecord", ... or "0xNNNN".
std::string method_name(uint8_t method);
std::string attribute_name(uint16_t attr_id);

struct LevelCount {
  uint64_t records = 0;   // pairs answered at this level
  uint64_t rejected = 0;  // pairs at this level that gave no record
};

// Upper bounds (seconds) of the answer-latency histogram's buckets; the last bucket is +Inf.
// From 5 us (a cached answer) to 100 ms (a MAD far slower than any client waits for).
inline constexpr std::array<double, 12> kLatencyBounds = {5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4,   2.5e-4,
                                                          5e-4, 1e-3, 2.5e-3, 1e-2, 2.5e-2, 1e-1};

struct LatencyHistogram {
  std::array<uint64_t, kLatencyBounds.size() + 1> buckets{};  // per bucket, not cumulative
  uint64_t count = 0;
  double sum_seconds = 0;
};

struct CounterSnapshot {
  uint64_t requests = 0;   // requests handed to the answer engine
  uint64_t responses = 0;  // responses sent
  uint64_t dropped_sm_key = 0;
  uint64_t dropped_unknown_requester = 0;  // path queries from a LID the model does not know
  // MADs the port failed: receives, and answers it did not send (the daemon keeps serving).
  uint64_t receive_errors = 0;
  uint64_t send_errors = 0;
  // Answers cut by a bound (AnswerLimits): ERR_NO_RESOURCES instead of a table too long, or of
  // an answer still computed at its deadline.
  uint64_t bounded_records = 0;
  uint64_t bounded_time = 0;
  // Large answers computed on a worker thread, and requests for one refused with BUSY because
  // every worker was taken and the queue full (rdma-qos-sad's --answer-threads).
  uint64_t deferred = 0;
  uint64_t busy = 0;
  // A request dropped because the same requester's request with its TID was still being
  // answered on a worker (a client's retry: the answer under way serves it).
  uint64_t dropped_duplicate = 0;
  std::map<std::string, uint64_t> methods;   // "GetTable PathRecord" -> requests
  std::map<std::string, uint64_t> statuses;  // "SUCCESS", "SA_ERR_NO_RECORDS" ... -> responses
  std::map<std::string, LevelCount> levels;  // level name, or "(no level)" -> pairs
  std::map<std::string, uint64_t> rejections;
  LatencyHistogram latency;  // request decoded to answer computed
};

nlohmann::json to_json(const CounterSnapshot& s);

// The samples of the answer families rdma-qos-sad and the OpenSM plugin share (each table names
// them the same, under its own prefix): requests_total, responses_total, dropped_total,
// mad_errors_total, bounded_total, deferred_total, busy_total, pairs_total, rejections_total,
// answer_duration_seconds.
void add_answer_samples(const CounterSnapshot& s, common::metrics::Snapshot& m);

// rdma-qos-sad's metric families (rdma_qos_sad_*, labelled with the daemon's ca and port): the
// one list of what `rdma-qos sad stats --format prometheus` shows.
const common::metrics::Table& sad_metric_table();

// What the daemon knows beside the counters.
struct SadFigures {
  std::string ca;
  int port = 0;
  uint16_t lid = 0;
  double uptime_seconds = 0;
  uint64_t undecodable = 0;  // MADs dropped because they do not decode
  size_t policy_rules = 0;
  uint64_t reloads = 0, reload_failures = 0;
  size_t fabric_endpoints = 0;
  uint64_t discoveries = 0, discovery_failures = 0;
  size_t traps_subscribed = 0;                // traps the SM accepted our subscription to
  std::map<uint16_t, uint64_t> trap_reports;  // the SM's reports, by trap number
};

// rdma-qos-sad's metrics against sad_metric_table().
common::metrics::Snapshot sad_metrics(const CounterSnapshot& s, const SadFigures& f);

class SaCounters {
 public:
  using Counter = std::atomic<uint64_t>;
  struct LevelSlot {
    Counter records{0}, rejected{0};
  };
  // Where the levels of one policy count: made when the policy is loaded and kept with it, so
  // the answer path reads it without a lock while the next policy is bound.
  struct LevelBinding {
    std::unordered_map<const policy::Level*, LevelSlot*> slots;
    LevelSlot* no_level = nullptr;
  };

  SaCounters();
  // Counts by level name: a level's counters survive reloads that keep its name. Thread-safe.
  std::shared_ptr<const LevelBinding> bind_policy(const policy::CompiledPolicy* policy);

  void request(uint8_t method, uint16_t attr_id) {
    bump(methods_[method_slot(method, attr_id)]);
    bump(requests_);
  }
  void response(uint16_t mad_status) {
    bump(statuses_[status_slot(mad_status)]);
    bump(responses_);
  }
  void dropped_sm_key() { bump(dropped_sm_key_); }
  void dropped_unknown_requester() { bump(dropped_unknown_requester_); }
  void receive_error() { bump(receive_errors_); }
  void send_error() { bump(send_errors_); }
  void bounded(Bound bound) { bump(bound == Bound::kRecords ? bounded_records_ : bounded_time_); }
  void deferred() { bump(deferred_); }
  void busy() { bump(busy_); }
  void dropped_duplicate() { bump(dropped_duplicate_); }
  // How long one request took to answer.
  void latency(std::chrono::nanoseconds took);
  void pair(const LevelBinding& binding, const policy::Level* level, Rejection rejection);

  CounterSnapshot snapshot() const;

 private:
  static void bump(Counter& c) { c.fetch_add(1, std::memory_order_relaxed); }
  static constexpr size_t kAttributeSlots = 4;  // ClassPortInfo, PathRecord, MultiPathRecord, other
  static size_t method_slot(uint8_t method, uint16_t attr_id);
  // SA-specific codes (high byte) and the common part (low byte) have separate slots.
  static size_t status_slot(uint16_t mad_status);

  Counter requests_{0}, responses_{0}, dropped_sm_key_{0}, dropped_unknown_requester_{0};
  Counter receive_errors_{0}, send_errors_{0};
  Counter bounded_records_{0}, bounded_time_{0}, deferred_{0}, busy_{0}, dropped_duplicate_{0};
  std::array<Counter, 256 * kAttributeSlots> methods_{};
  std::array<Counter, 512> statuses_{};
  std::array<Counter, 16> rejections_{};
  std::array<Counter, kLatencyBounds.size() + 1> latency_buckets_{};
  Counter latency_count_{0}, latency_sum_ns_{0};
  mutable std::mutex names_mutex_;  // guards the map, not the slots (stable, atomic)
  std::map<std::string, std::unique_ptr<LevelSlot>> levels_by_name_;
};

// The observer the answer engine calls for one request: counts into `counters` through the
// binding of the policy that answers it.
class CountingObserver final : public AnswerObserver {
 public:
  CountingObserver(SaCounters& counters, const SaCounters::LevelBinding& binding)
      : counters_(counters), binding_(binding) {}
  void pair(const policy::Level* level, Rejection rejection) override {
    counters_.pair(binding_, level, rejection);
  }
  void bounded(Bound bound) override { counters_.bounded(bound); }

 private:
  SaCounters& counters_;
  const SaCounters::LevelBinding& binding_;
};

}  // namespace rdmaqos::sad
