// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The back-off of a failed SA open: not retried before it, doubled after each failure up to the
// ceiling, and reset by a success.
#include "retry_backoff.h"

#include <gtest/gtest.h>

namespace rdmaqos::preload {
namespace {

using namespace std::chrono_literals;
using Clock = RetryBackoff::Clock;

TEST(RetryBackoff, TheFirstAttemptIsAllowed) {
  RetryBackoff b(1000ms, 30000ms);
  EXPECT_TRUE(b.may_try(Clock::now()));
}

TEST(RetryBackoff, AFailureIsRetriedAfterTheBackoffNotForever) {
  RetryBackoff b(1000ms, 30000ms);
  const auto t0 = Clock::time_point{} + 100s;
  b.failed(t0);
  EXPECT_FALSE(b.may_try(t0 + 999ms));
  EXPECT_TRUE(b.may_try(t0 + 1000ms));
}

TEST(RetryBackoff, DoublesAfterEachFailureUpToTheCeiling) {
  RetryBackoff b(1000ms, 30000ms);
  auto t = Clock::time_point{} + 100s;
  // Waits 1, 2, 4, 8, 16, 30, 30 s.
  for (auto wait : {1000ms, 2000ms, 4000ms, 8000ms, 16000ms, 30000ms, 30000ms}) {
    b.failed(t);
    EXPECT_FALSE(b.may_try(t + wait - 1ms)) << wait.count();
    EXPECT_TRUE(b.may_try(t + wait)) << wait.count();
    t += wait;
  }
}

TEST(RetryBackoff, ASuccessStartsOver) {
  RetryBackoff b(1000ms, 30000ms);
  auto t = Clock::time_point{} + 100s;
  b.failed(t);
  b.failed(t + 1s);  // the next wait would be 4 s
  b.succeeded();
  EXPECT_TRUE(b.may_try(t + 1s));
  b.failed(t + 10s);
  EXPECT_TRUE(b.may_try(t + 11s));
}

}  // namespace
}  // namespace rdmaqos::preload
