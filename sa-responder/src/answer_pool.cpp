// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The worker threads of large answers.
#include "rdma-qos/sa-responder/answer_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rdmaqos::sad {

bool named_ends_inline(const sa::SaMad& request, const FabricModel& model) {
  namespace pr = sa::pr_mask;
  const uint64_t m = request.sa.comp_mask;
  return request.mad.attr_id == sa::attr::kPathRecord && (m & (pr::kSgid | pr::kSlid)) &&
         (m & (pr::kDgid | pr::kDlid)) && (size_t{1} << (2 * model.subnet_lmc())) <= kInlineWork;
}

AnswerPool::AnswerPool(size_t threads, size_t capacity, int nice) : capacity_(capacity) {
  threads = std::max<size_t>(threads, 1);
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this, nice] { work(nice); });
}

AnswerPool::~AnswerPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    waiting_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

AnswerPool::Admission AnswerPool::submit(Key key, Task task) {
  {
    std::lock_guard lock(mutex_);
    if (keys_.contains(key)) return Admission::kDuplicate;
    // A worker free takes the task at once, whatever the capacity.
    const size_t running = keys_.size() - waiting_.size();
    if (running >= workers_.size() && waiting_.size() >= capacity_) return Admission::kFull;
    keys_.insert(key);
    waiting_.emplace_back(key, std::move(task));
  }
  wake_.notify_one();
  return Admission::kQueued;
}

size_t AnswerPool::in_flight() const {
  std::lock_guard lock(mutex_);
  return keys_.size();
}

void AnswerPool::work(int nice) {
  if (nice != 0) {
    // A thread's own nice value on Linux (PRIO_PROCESS with a thread id); raising it needs no
    // privilege. Failure leaves the worker at the receiving thread's priority.
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, tid);
    if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(current + nice, 19));
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !waiting_.empty(); });
    if (stop_) return;
    auto [key, task] = std::move(waiting_.front());
    waiting_.pop_front();
    lock.unlock();
    try {
      task();
    } catch (...) {
      // The task reports its own failures; one that escapes must not end the worker.
    }
    lock.lock();
    keys_.erase(key);
  }
}

}  // namespace rdmaqos::sad
