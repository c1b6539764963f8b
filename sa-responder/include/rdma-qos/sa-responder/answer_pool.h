// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Worker threads for the answers that expand to many pairs (an open-ended PathRecord GetTable),
// so that the thread receiving MADs keeps answering the small ones meanwhile. A fixed number of
// workers at a lower CPU priority take tasks from a bounded queue; a request already queued or
// being answered is not taken twice (a client's retry of the same TID).
#pragma once

#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

// Where a front end (rdma-qos-sad, the OpenSM plugin) computes an answer. Answers that expand
// to more LID combinations than this (estimate_work) go to a worker: inline, one costs about
// half a millisecond of the thread that received it at most.
inline constexpr size_t kInlineWork = 1024;
// Large requests waiting per worker before more are answered BUSY.
inline constexpr size_t kQueuedPerWorker = 4;
// Workers run this much nicer than the receiving thread, which keeps the CPU for small answers.
inline constexpr int kWorkerNice = 10;

// A PathRecord request naming both its ends (by GID or LID) looks at no more than 2^LMC x
// 2^LMC LID combinations: with the subnet's LMC that is at most kInlineWork, so it is answered
// inline without estimate_work (most queries; the estimate would decode the record twice).
bool named_ends_inline(const sa::SaMad& request, const FabricModel& model);

class AnswerPool {
 public:
  using Task = std::function<void()>;
  // A request: its requester's LID and its TID.
  struct Key {
    uint16_t lid = 0;
    uint64_t tid = 0;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  enum class Admission {
    kQueued,     // a worker runs the task
    kFull,       // every worker busy and `capacity` tasks waiting: not taken
    kDuplicate,  // a task with this key is waiting or running: not taken
  };

  // `threads` workers (at least 1), at most `capacity` tasks waiting besides the running ones.
  // Workers run `nice` steps below the creating thread's priority (setpriority on the thread;
  // 0: the same), so that the receiving thread wins the CPU; they inherit its signal mask.
  AnswerPool(size_t threads, size_t capacity, int nice);
  // Drops the tasks still waiting and joins the workers once their running task returns.
  ~AnswerPool();
  AnswerPool(const AnswerPool&) = delete;
  AnswerPool& operator=(const AnswerPool&) = delete;

  Admission submit(Key key, Task task);

  size_t threads() const { return workers_.size(); }
  // Tasks waiting or running now.
  size_t in_flight() const;

 private:
  void work(int nice);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<Key, Task>> waiting_;
  std::set<Key> keys_;  // waiting or running
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace rdmaqos::sad
