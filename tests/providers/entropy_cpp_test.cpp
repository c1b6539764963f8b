// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The entropy library through its C++ API (entropy.hpp), linked on its own: the published
// vectors and values worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "rdma-qos/providers/entropy.hpp"

namespace rdmaqos::providers {
namespace {

static_assert(kFlowLabelMask == 0xFFFFFu);
static_assert(kRoceSportBase == 0xC000u);
static_assert(noexcept(udp_sport_from_flow_label(0)));
static_assert(std::is_same_v<decltype(flow_label_from_qpns(1, 2)), uint32_t>);

TEST(EntropyCpp, PublishedQpnVector) {
  EXPECT_EQ(flow_label_from_qpns(0x123, 0xabcd), 0x34a0bu);
  EXPECT_EQ(udp_sport_from_flow_label(0x34a0b), 0xca06);
}

// 0x123 * 0xabcd = 0xc34a07; ^ >> 16 = 0xc34ac4; ^ >> 8 = 0xc3898e; 20 bits: 0x3898e.
// Fold: low 14 bits 0x098e ^ high 6 bits 0x0e = 0x0980, | 0xC000 = 0xc980.
TEST(EntropyCpp, CmPortVector) {
  EXPECT_EQ(flow_label_from_cm_ports(0x123, 0xabcd), 0x3898eu);
  EXPECT_EQ(flow_label_from_cm_ports(0xabcd, 0x123), 0x3898eu);
  EXPECT_EQ(udp_sport_from_flow_label(0x3898e), 0xc980);
}

// 40000 * 31 + 3260 = 1,243,260 = 0x12f87c; 20 bits: 0x2f87c. Swapped: 3260 * 31 + 40000 =
// 141,060 = 0x22704.
TEST(EntropyCpp, LinuxCmLabelIsNotSymmetric) {
  EXPECT_EQ(flow_label_linux_cm(40000, 3260), 0x2f87cu);
  EXPECT_EQ(flow_label_linux_cm(3260, 40000), 0x22704u);
}

TEST(EntropyCpp, SpreadIsSymmetricAndNeighboursGetDifferentPorts) {
  EXPECT_EQ(flow_label_spread(4420, 50000), flow_label_spread(50000, 4420));
  EXPECT_NE(udp_sport_from_flow_label(flow_label_spread(4420, 50000)),
            udp_sport_from_flow_label(flow_label_spread(4420, 50001)));
  EXPECT_NE(flow_label_spread(0, 0), 0u);
}

TEST(EntropyCpp, SportFoldsHighSixBitsIntoLowFourteen) {
  EXPECT_EQ(udp_sport_from_flow_label(0), 0xC000);
  EXPECT_EQ(udp_sport_from_flow_label(0x12345), 58177);  // 0x2345 ^ 0x04 = 0x2341, | 0xC000
  EXPECT_EQ(udp_sport_from_flow_label(0xFFFFFFFF), 0xC000 | (0x3FFF ^ 0x3F));
}

}  // namespace
}  // namespace rdmaqos::providers
