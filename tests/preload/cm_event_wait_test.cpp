// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's own wait for an rdma_cm event ends within its bound: a channel that stays silent
// is never handed to rdma_get_cm_event, which would block until an event came.
#include "cm_event_wait.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

namespace rdmaqos::preload {
namespace {

int calls = 0;
rdma_cm_event the_event{};

// Stands in for the real rdma_get_cm_event: counts its calls, hands out one event.
int fake_get(rdma_event_channel*, rdma_cm_event** event) {
  ++calls;
  *event = &the_event;
  return 0;
}

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
};

TEST(CmEventWait, SilentChannelTimesOutWithoutReading) {
  Pipe p;
  rdma_event_channel channel{p.fds[0]};
  calls = 0;
  rdma_cm_event* ev = nullptr;
  EXPECT_EQ(get_cm_event_within(&fake_get, &channel, std::chrono::milliseconds(20), &ev), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ev, nullptr);
}

TEST(CmEventWait, PendingEventIsRead) {
  Pipe p;
  ASSERT_EQ(write(p.fds[1], "e", 1), 1);
  rdma_event_channel channel{p.fds[0]};
  calls = 0;
  rdma_cm_event* ev = nullptr;
  EXPECT_EQ(get_cm_event_within(&fake_get, &channel, std::chrono::milliseconds(20), &ev), 0);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ev, &the_event);
}

}  // namespace
}  // namespace rdmaqos::preload
