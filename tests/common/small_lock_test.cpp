// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The host module's table lock: mutual exclusion, and a thread that finds it held sleeps until
// the holder lets go.
#include "rdma-qos/common/small_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace rdmaqos {
namespace {

TEST(SmallLock, ThreadsIncrementingUnderItLoseNoIncrement) {
  SmallLock lock;
  long counter = 0;  // deliberately not atomic: the lock is what protects it
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        std::lock_guard guard(lock);
        ++counter;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, 400000);
}

TEST(SmallLock, AWaiterGetsItOnlyAfterTheHolderReleasesIt) {
  SmallLock lock;
  std::atomic<bool> released{false};
  std::atomic<bool> got_it_before_release{false};
  lock.lock();
  std::thread waiter([&] {
    std::lock_guard guard(lock);
    got_it_before_release = !released.load();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  released = true;
  lock.unlock();
  waiter.join();
  EXPECT_FALSE(got_it_before_release.load());
}

TEST(SmallLock, IsFreeAgainAfterContention) {
  SmallLock lock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        lock.lock();
        lock.unlock();
      }
    });
  for (std::thread& t : threads) t.join();
  // Taken and released once more without blocking: no waiter mark left behind.
  std::thread last([&] {
    lock.lock();
    lock.unlock();
  });
  last.join();
  SUCCEED();
}

}  // namespace
}  // namespace rdmaqos
