// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The worker threads of large answers: tasks run off the submitting thread, a request (LID and
// TID) is taken once while waiting or running, and a full queue refuses instead of growing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "rdma-qos/sa-responder/answer_pool.h"

namespace rdmaqos::sad {
namespace {

using Admission = AnswerPool::Admission;
using namespace std::chrono_literals;

// Tasks that wait until released, so a test decides what is running.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Blocks until `n` tasks wait at the gate.
  void await_waiting(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this, n] { return waiting_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(AnswerPool, RunsTasksOffTheSubmittingThread) {
  AnswerPool pool(2, 4, 0);
  EXPECT_EQ(pool.threads(), 2u);
  std::promise<std::thread::id> ran;
  auto id = ran.get_future();
  EXPECT_EQ(pool.submit({2, 1}, [&ran] { ran.set_value(std::this_thread::get_id()); }),
            Admission::kQueued);
  ASSERT_EQ(id.wait_for(10s), std::future_status::ready);
  EXPECT_NE(id.get(), std::this_thread::get_id());
}

TEST(AnswerPool, ARequestIsTakenOnceWhileWaitingOrRunning) {
  Gate gate;
  AnswerPool pool(1, 4, 0);
  ASSERT_EQ(pool.submit({2, 7}, [&gate] { gate.wait(); }), Admission::kQueued);
  gate.await_waiting(1);
  // The same requester's retry (same TID) while it runs; another TID, or another requester's
  // same TID, are other requests.
  EXPECT_EQ(pool.submit({2, 7}, [] {}), Admission::kDuplicate);
  EXPECT_EQ(pool.submit({2, 8}, [] {}), Admission::kQueued);
  EXPECT_EQ(pool.submit({3, 7}, [] {}), Admission::kQueued);
  EXPECT_EQ(pool.submit({3, 7}, [] {}), Admission::kDuplicate);  // waiting
  gate.open();
  for (int i = 0; i < 1000 && pool.in_flight() > 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pool.in_flight(), 0u);
  // Done: the TID may come again (a new request).
  std::promise<void> again;
  EXPECT_EQ(pool.submit({2, 7}, [&again] { again.set_value(); }), Admission::kQueued);
  EXPECT_EQ(again.get_future().wait_for(10s), std::future_status::ready);
}

TEST(AnswerPool, AFullQueueRefusesInsteadOfGrowing) {
  Gate gate;
  AnswerPool pool(2, 3, 0);
  for (uint64_t t = 0; t < 2; ++t) {
    ASSERT_EQ(pool.submit({2, t}, [&gate] { gate.wait(); }), Admission::kQueued);
  }
  gate.await_waiting(2);  // both workers taken
  for (uint64_t t = 2; t < 5; ++t) EXPECT_EQ(pool.submit({2, t}, [] {}), Admission::kQueued);
  EXPECT_EQ(pool.submit({2, 5}, [] {}), Admission::kFull);
  EXPECT_EQ(pool.in_flight(), 5u);
  gate.open();
}

TEST(AnswerPool, DestructionDropsWaitingTasksAndWaitsForRunningOnes) {
  Gate gate;
  std::atomic<int> finished{0}, dropped_ran{0};
  std::thread opener;
  {
    AnswerPool pool(1, 4, 0);
    ASSERT_EQ(pool.submit({2, 1},
                          [&] {
                            gate.wait();
                            ++finished;
                          }),
              Admission::kQueued);
    gate.await_waiting(1);
    ASSERT_EQ(pool.submit({2, 2}, [&] { ++dropped_ran; }), Admission::kQueued);
    opener = std::thread([&gate] {
      std::this_thread::sleep_for(50ms);
      gate.open();
    });
  }
  opener.join();
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(dropped_ran, 0);
}

TEST(AnswerPool, ATaskThatThrowsLeavesItsWorkerServing) {
  AnswerPool pool(1, 4, 0);
  ASSERT_EQ(pool.submit({2, 1}, [] { throw std::runtime_error("x"); }), Admission::kQueued);
  std::promise<void> next;
  ASSERT_EQ(pool.submit({2, 2}, [&next] { next.set_value(); }), Admission::kQueued);
  EXPECT_EQ(next.get_future().wait_for(10s), std::future_status::ready);
}

TEST(AnswerPool, WorkersRunNicerThanTheCreator) {
  AnswerPool pool(1, 4, 5);
  std::promise<int> nice;
  ASSERT_EQ(pool.submit({2, 1},
                        [&nice] {
                          errno = 0;
                          nice.set_value(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
                        }),
            Admission::kQueued);
  auto f = nice.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  const int mine = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  EXPECT_EQ(f.get(), std::min(mine + 5, 19));
}

}  // namespace
}  // namespace rdmaqos::sad
