// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What both SA front ends (rdma-qos-sad at its own umad port, the OpenSM plugin inside OpenSM's
// dispatcher) do once they have a request and until they have its answer: the state in force
// and its counters, the answering context, the choice between this thread and a worker, the
// counted computation, and the control socket's "explain". Each front end keeps only what
// differs: where the model comes from (its own discovery, OpenSM's subnet), how a request
// arrives and an answer leaves, and what it does when no state can be built (rdma-qos-sad keeps
// the previous one; the plugin leaves the queries to OpenSM's own handlers).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/answer_pool.h"
#include "rdma-qos/sa-responder/answer_state.h"
#include "rdma-qos/sa-responder/counters.h"
#include "rdma-qos/sa-responder/explain.h"

namespace rdmaqos::sad {

struct ServiceOptions {
  uint64_t sa_key = kDefaultSaKey;
  // Answering bounds (AnswerLimits): the most records in one table answer (0: none) and the time
  // one answer may take from its request's arrival (0: none).
  size_t max_records = 0;
  std::chrono::milliseconds answer_time_limit{0};
  // Worker threads for the answers that expand to many pairs (0: every answer where received).
  size_t answer_threads = 0;
  // The routing engine's SLs, used where the model says the engine assigns them (the plugin's;
  // rdma-qos-sad refuses to run on such a fabric). Must outlive the service.
  const RoutingSl* routing = nullptr;
};

// The state in force with the counters' view of its policy: swapped as one pointer.
struct AnswerSnapshot : AnswerState {
  std::shared_ptr<const SaCounters::LevelBinding> levels;
};

class AnswerService {
 public:
  using Clock = std::chrono::steady_clock;

  explicit AnswerService(ServiceOptions options) : options_(options) {}
  ~AnswerService() { stop_workers(); }
  AnswerService(const AnswerService&) = delete;
  AnswerService& operator=(const AnswerService&) = delete;

  // Creates the workers (options' answer_threads; none for 0). They inherit the calling
  // thread's signal mask and run kWorkerNice below its priority: call it from the thread whose
  // mask they must have.
  void start_workers();
  // Waits for the answers under way and drops the queued ones (their tasks use what the front
  // end owns: call it before tearing that down).
  void stop_workers();

  // Puts `state` in force: the model's live multicast groups (OpenSM's) replace those the
  // partitions imply, and the counters are bound to its policy's levels.
  void install(AnswerState state);
  // Nothing in force (the plugin hands the queries to OpenSM).
  void clear() { current_.store(nullptr); }
  // The state in force; null before the first install() and after clear().
  std::shared_ptr<const AnswerSnapshot> current() const { return current_.load(); }

  SaCounters& counters() { return counters_; }
  const SaCounters& counters() const { return counters_; }

  // The context of an answer from `now` to a request from `slid` (nullopt: on nobody's
  // behalf, as explain asks), received at `received` (nullopt: no deadline), without observer.
  AnswerContext context(const AnswerSnapshot& now, std::optional<uint16_t> slid,
                        std::optional<Clock::time_point> received) const;

  // The answer to `request` (its record `decoded`, by decode_query) from `now`, counted (its
  // status, its latency, its pairs by level) on whichever thread computes it. No answer: a
  // response, or an unknown requester (`requester_unknown`, counted as dropped).
  struct Computed {
    std::optional<sa::SaMad> answer;
    bool requester_unknown = false;
  };
  Computed compute(const sa::SaMad& request, const DecodedQuery& decoded, uint16_t slid,
                   const AnswerSnapshot& now, Clock::time_point received);

  // Where `request` is answered. kHere: by the caller, now. Otherwise it names no two ends, its
  // work estimate (estimate_work) is above kInlineWork and there are workers: the task that
  // `make_task()` gives (made only then: it copies the request) was queued on one (kQueued), or
  // not taken because the same requester and TID is queued or being answered (kDuplicate, a
  // retry: no answer), or because every worker is busy and the queue full (kBusy: `busy` is the
  // BUSY answer to send). Each outcome but kHere is counted here.
  enum class Placement { kHere, kQueued, kDuplicate, kBusy };
  struct Placed {
    Placement placement = Placement::kHere;
    std::optional<sa::SaMad> busy;
  };
  // `now` the state it is answered from; `make_context()` its context, asked for only when the
  // request names no two ends (most queries do: they are answered here without one).
  template <class MakeContext, class MakeTask>
  Placed place(const sa::SaMad& request, const DecodedQuery& decoded, uint16_t slid,
               const AnswerSnapshot& now, MakeContext&& make_context, Clock::time_point received,
               MakeTask&& make_task) {
    if (!pool_ || named_ends_inline(request, *now.model)) return {};
    if (estimate_work(make_context(), request, decoded) <= kInlineWork) return {};
    return submit(request, slid, received, make_task());
  }

  // The control command "explain": what `now` answers to one query and why (sad::explain).
  nlohmann::json explain(const AnswerSnapshot& now, const ExplainRequest& request,
                         const std::string& policy_path) const;

 private:
  Placed submit(const sa::SaMad& request, uint16_t slid, Clock::time_point received,
                AnswerPool::Task task);

  const ServiceOptions options_;
  SaCounters counters_;
  std::atomic<std::shared_ptr<const AnswerSnapshot>> current_;
  std::unique_ptr<AnswerPool> pool_;
};

}  // namespace rdmaqos::sad
