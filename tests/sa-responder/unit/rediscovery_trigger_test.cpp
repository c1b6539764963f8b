// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// When rdma-qos-sad re-discovers before its period: the port's or its SM's LID moved and
// settled, or an unknown LID asked for paths (at most once a minute).
#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/rediscovery_trigger.h"

namespace rdmaqos::sad {
namespace {

constexpr PortLids kDiscovered{.lid = 2, .sm_lid = 1};

TEST(RediscoveryTrigger, UnchangedLidsTriggerNothing) {
  RediscoveryTrigger t(kDiscovered);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(t.port_read(kDiscovered));
}

TEST(RediscoveryTrigger, APortLidThatMovedTriggersOnceItSettled) {
  RediscoveryTrigger t(kDiscovered);
  EXPECT_FALSE(t.port_read(PortLids{5, 1}));  // first seen: the SM may still be sweeping
  EXPECT_TRUE(t.port_read(PortLids{5, 1}));
  EXPECT_EQ(t.known(), (PortLids{5, 1}));
  EXPECT_FALSE(t.port_read(PortLids{5, 1}));  // once
}

TEST(RediscoveryTrigger, AnSmLidThatMovedTriggers) {
  RediscoveryTrigger t(kDiscovered);
  EXPECT_FALSE(t.port_read(PortLids{2, 7}));
  EXPECT_TRUE(t.port_read(PortLids{2, 7}));
}

TEST(RediscoveryTrigger, AMoveUndoneBeforeItSettledTriggersNothing) {
  RediscoveryTrigger t(kDiscovered);
  EXPECT_FALSE(t.port_read(PortLids{5, 1}));
  EXPECT_FALSE(t.port_read(kDiscovered));
  EXPECT_FALSE(t.port_read(kDiscovered));
}

TEST(RediscoveryTrigger, AnUnreadablePortSaysNothing) {
  RediscoveryTrigger t(kDiscovered);
  EXPECT_FALSE(t.port_read(std::nullopt));
  EXPECT_FALSE(t.port_read(PortLids{5, 1}));
  EXPECT_FALSE(t.port_read(std::nullopt));  // a down port between two readings
  EXPECT_TRUE(t.port_read(PortLids{5, 1}));
}

TEST(RediscoveryTrigger, UnknownRequestersRediscoverAtMostOncePerGap) {
  RediscoveryTrigger t(kDiscovered);
  const RediscoveryTrigger::Clock::time_point start{};
  const auto gap = RediscoveryTrigger::kUnknownRequesterGap;
  EXPECT_EQ(gap, std::chrono::seconds(60));
  EXPECT_TRUE(t.unknown_requester(start));
  EXPECT_FALSE(t.unknown_requester(start + std::chrono::seconds(1)));
  EXPECT_FALSE(t.unknown_requester(start + gap - std::chrono::milliseconds(1)));
  EXPECT_TRUE(t.unknown_requester(start + gap));
  EXPECT_FALSE(t.unknown_requester(start + gap + std::chrono::seconds(59)));
}

}  // namespace
}  // namespace rdmaqos::sad
