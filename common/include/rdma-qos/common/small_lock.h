// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The lock of the host module's per-connection tables (the id and QP registries, the match
// cache): taking and releasing it without contention is one atomic instruction each, inline;
// a thread that finds it held sleeps (std::atomic wait, a futex), as on std::mutex, so it never
// spins against a holder that was preempted. std::mutex costs two calls into libc per step, and
// connection setup takes these locks about a dozen times per connection on each side; under
// emulation (the RoCE test bed's TCG guest) those calls are a visible part of what the module
// costs a connection.
// BasicLockable (std::lock_guard, std::unique_lock). Not recursive. The fork handlers take it
// before fork() and release it after, in parent and child, as they did the mutexes.
#pragma once

#include <atomic>

namespace rdmaqos {

class SmallLock {
 public:
  constexpr SmallLock() = default;
  SmallLock(const SmallLock&) = delete;
  SmallLock& operator=(const SmallLock&) = delete;

  void lock() {
    int expected = kFree;
    if (state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire,
                                       std::memory_order_relaxed)) [[likely]]
      return;
    lock_contended();
  }

  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kHeldWithWaiters) [[unlikely]]
      state_.notify_one();
  }

 private:
  static constexpr int kFree = 0;
  static constexpr int kHeld = 1;
  static constexpr int kHeldWithWaiters = 2;

  // Marks the lock as having waiters and sleeps until it is free (the classic three-state futex
  // lock: a thread that takes it after sleeping keeps the mark, so its unlock wakes the next).
  [[gnu::noinline]] void lock_contended() {
    while (state_.exchange(kHeldWithWaiters, std::memory_order_acquire) != kFree)
      state_.wait(kHeldWithWaiters, std::memory_order_relaxed);
  }

  std::atomic<int> state_{kFree};
};

}  // namespace rdmaqos
