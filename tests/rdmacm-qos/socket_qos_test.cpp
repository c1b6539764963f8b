// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rsockets' per-descriptor QoS: what rsetsockopt asked for is kept per socket until rclose
// forgets it, so a later socket on the same descriptor starts with nothing.
#include "rdma-qos/rdmacm-qos/socket_qos.h"

#include <gtest/gtest.h>

namespace rdmaqos::rdmacm {
namespace {

TEST(SocketQos, TosAndPriorityAreKeptPerSocket) {
  SocketQosTable t;
  t.set_tos(5, 32);
  t.set_class(6, 7);
  ASSERT_TRUE(t.find(5));
  EXPECT_EQ(t.find(5)->tos, std::optional<uint8_t>(32));
  EXPECT_FALSE(t.find(5)->qos_class);
  ASSERT_TRUE(t.find(6));
  EXPECT_EQ(t.find(6)->qos_class, std::optional<uint16_t>(7));
  EXPECT_FALSE(t.find(6)->tos);
  EXPECT_FALSE(t.find(7));
}

TEST(SocketQos, BothOptionsOnOneSocketAreKept) {
  SocketQosTable t;
  t.set_tos(5, 32);
  t.set_class(5, 7);
  EXPECT_EQ(t.find(5)->tos, std::optional<uint8_t>(32));
  EXPECT_EQ(t.find(5)->qos_class, std::optional<uint16_t>(7));
}

TEST(SocketQos, ReusedDescriptorDoesNotInheritTheClosedSocketsQos) {
  SocketQosTable t;
  t.set_tos(5, 32);
  t.set_class(5, 7);
  t.erase(5);  // rclose(5)
  EXPECT_FALSE(t.find(5));
  t.set_class(5, 9);  // a new socket got descriptor 5 and asks only for a QoS-Class
  ASSERT_TRUE(t.find(5));
  EXPECT_FALSE(t.find(5)->tos);
  EXPECT_EQ(t.find(5)->qos_class, std::optional<uint16_t>(9));
}

TEST(SocketQos, ErasingAnUnknownSocketIsHarmless) {
  SocketQosTable t;
  t.erase(42);
  EXPECT_FALSE(t.find(42));
}

}  // namespace
}  // namespace rdmaqos::rdmacm
