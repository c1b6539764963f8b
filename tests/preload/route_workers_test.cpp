// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The route workers and the pending routes' table: a job runs off the caller's thread, and an id
// destroyed while its route is pending is never touched by the worker afterwards.
#include "route_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace rdmaqos::preload {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Stand-in ids: only their addresses are used.
rdma_cm_id* fake_id(int n) {
  static rdma_cm_id ids[8];
  return &ids[n];
}

TEST(RouteWorkers, AJobRunsWhileTheCallerGoesOn) {
  std::promise<std::thread::id> ran_on;
  auto start = Clock::now();
  ASSERT_TRUE(run_on_route_worker([&] {
    std::this_thread::sleep_for(200ms);
    ran_on.set_value(std::this_thread::get_id());
  }));
  EXPECT_LT(Clock::now() - start, 100ms);
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
}

TEST(RouteWorkers, SlowJobsRunAtTheSameTime) {
  std::atomic<int> done{0};
  auto start = Clock::now();
  for (size_t i = 0; i < kRouteWorkers; ++i)
    ASSERT_TRUE(run_on_route_worker([&] {
      std::this_thread::sleep_for(300ms);
      ++done;
    }));
  while (done < static_cast<int>(kRouteWorkers) && Clock::now() - start < 5s)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(done, static_cast<int>(kRouteWorkers));
  EXPECT_LT(Clock::now() - start, 900ms);  // one after another: 1200 ms
}

TEST(PendingRoutes, ASecondResolutionOfAPendingIdIsRefused) {
  auto first = start_pending_route(fake_id(0));
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(route_pending(fake_id(0)));
  EXPECT_EQ(start_pending_route(fake_id(0)), nullptr);
  end_pending_route(first);
  EXPECT_FALSE(route_pending(fake_id(0)));
}

TEST(PendingRoutes, AnIdDestroyedDuringTheQueryIsLeftAlone) {
  auto route = start_pending_route(fake_id(1));
  ASSERT_NE(route, nullptr);
  auto start = Clock::now();
  cancel_pending_route(fake_id(1));
  EXPECT_LT(Clock::now() - start, 50ms);  // the destroy does not wait for the SA
  EXPECT_FALSE(route_pending(fake_id(1)));
  EXPECT_FALSE(begin_route_install(*route));
  end_pending_route(route);
}

TEST(PendingRoutes, ADestroyDuringTheInstallWaitsForIt) {
  auto route = start_pending_route(fake_id(2));
  ASSERT_NE(route, nullptr);
  ASSERT_TRUE(begin_route_install(*route));
  std::atomic<bool> installed{false};
  std::thread worker([&] {
    std::this_thread::sleep_for(100ms);
    installed = true;
    end_pending_route(route);
  });
  cancel_pending_route(fake_id(2));
  EXPECT_TRUE(installed);
  worker.join();
  EXPECT_FALSE(route_pending(fake_id(2)));
}

TEST(PendingRoutes, ANewIdAtADestroyedIdsAddressIsItsOwn) {
  auto old_route = start_pending_route(fake_id(3));
  ASSERT_NE(old_route, nullptr);
  cancel_pending_route(fake_id(3));
  auto new_route = start_pending_route(fake_id(3));
  ASSERT_NE(new_route, nullptr);
  end_pending_route(old_route);  // the cancelled worker finishing does not end the new one
  EXPECT_TRUE(route_pending(fake_id(3)));
  EXPECT_TRUE(begin_route_install(*new_route));
  end_pending_route(new_route);
  EXPECT_FALSE(route_pending(fake_id(3)));
}

}  // namespace
}  // namespace rdmaqos::preload
