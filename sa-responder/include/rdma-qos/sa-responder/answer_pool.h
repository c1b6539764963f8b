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

namespace rdmaqos::sad {

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
