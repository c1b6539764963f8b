// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RFC's entropy formulas: published vectors, tables computed here independently (by the
// RFC's text, written differently), symmetry, and the spread mode's collision-freedom.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>

#include "rdma-qos/providers/entropy.h"

namespace {

// Independent renderings of the RFC text, for the tables below.
uint32_t rfc_cm(uint32_t dport, uint32_t sport) {
  uint32_t h = dport * sport;
  uint32_t a = h ^ (h >> 16);
  uint32_t b = a ^ (a >> 8);
  return b % (1u << 20);
}

uint32_t rfc_qpn(uint64_t a, uint64_t b) {
  uint64_t h = (a % (1u << 24)) * (b % (1u << 24));
  uint64_t x = h ^ (h >> 20);
  uint64_t y = x ^ (x >> 40);
  return static_cast<uint32_t>(y % (1u << 20));
}

uint32_t rfc_sport(uint32_t fl) {
  uint32_t low = fl % (1u << 14);
  uint32_t high = (fl / (1u << 14)) % (1u << 6);
  return 49152u + (low ^ high);
}

TEST(Entropy, PublishedQpnVector) {
  EXPECT_EQ(rdma_qos_flow_label_from_qpns(0x123, 0xabcd), 0x34a0bu);
  EXPECT_EQ(rdma_qos_udp_sport_from_flow_label(0x34a0b), 0xca06);
}

TEST(Entropy, DesignNoteVector) {
  // A preload that set sin6_flowinfo = 0x12345 moved rxe's UDP source port to 58177.
  EXPECT_EQ(rdma_qos_udp_sport_from_flow_label(0x12345), 58177);
}

TEST(Entropy, SportIsAlwaysEphemeral) {
  EXPECT_EQ(rdma_qos_udp_sport_from_flow_label(0), 0xC000);
  EXPECT_EQ(rdma_qos_udp_sport_from_flow_label(0xFFFFF), 0xC000 | (0x3FFF ^ 0x3F));
  EXPECT_EQ(rdma_qos_udp_sport_from_flow_label(0xFFFFFFFF),
            rdma_qos_udp_sport_from_flow_label(0xFFFFF));
}

TEST(Entropy, CmPortLabelsMatchTheRfcTable) {
  const uint16_t servers[] = {3260, 4420, 7471, 18515, 1, 65535};
  std::mt19937 rng(7);
  for (uint16_t d : servers)
    for (int i = 0; i < 2000; ++i) {
      uint16_t s = static_cast<uint16_t>(rng());
      ASSERT_EQ(rdma_qos_flow_label_from_cm_ports(d, s), rfc_cm(d, s)) << d << " " << s;
    }
}

TEST(Entropy, QpnLabelsMatchTheRfcTable) {
  std::mt19937 rng(11);
  for (int i = 0; i < 10000; ++i) {
    uint32_t a = rng() & 0xFFFFFF, b = rng() & 0xFFFFFF;
    ASSERT_EQ(rdma_qos_flow_label_from_qpns(a, b), rfc_qpn(a, b));
  }
  // Only the 24-bit QPN counts.
  EXPECT_EQ(rdma_qos_flow_label_from_qpns(0x1000123, 0xabcd), 0x34a0bu);
}

TEST(Entropy, SportMatchesTheRfcTable) {
  for (uint32_t fl = 0; fl <= 0xFFFFF; fl += 7)
    ASSERT_EQ(rdma_qos_udp_sport_from_flow_label(fl), rfc_sport(fl));
}

TEST(Entropy, RfcLabelsAreSymmetric) {
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng());
    ASSERT_EQ(rdma_qos_flow_label_from_cm_ports(a, b), rdma_qos_flow_label_from_cm_ports(b, a));
    ASSERT_EQ(rdma_qos_flow_label_from_qpns(a * 255u, b),
              rdma_qos_flow_label_from_qpns(b, a * 255u));
    ASSERT_EQ(rdma_qos_flow_label_spread(a, b), rdma_qos_flow_label_spread(b, a));
  }
}

TEST(Entropy, LinuxCmLabelIsSportTimes31PlusDport) {
  EXPECT_EQ(rdma_qos_flow_label_linux_cm(40000, 3260), (40000u * 31 + 3260) & 0xFFFFF);
  EXPECT_EQ(rdma_qos_flow_label_linux_cm(65535, 65535), (65535u * 32) & 0xFFFFF);
}

TEST(Entropy, SpreadGivesDistinctPortsFor16384ConsecutiveClients) {
  for (uint16_t server : {3260, 4420, 7471, 18515}) {
    std::set<uint16_t> sports;
    for (uint32_t c = 32768; c < 32768 + 16384; ++c)
      sports.insert(rdma_qos_udp_sport_from_flow_label(
          rdma_qos_flow_label_spread(server, static_cast<uint16_t>(c))));
    EXPECT_EQ(sports.size(), 16384u) << "server port " << server;
  }
}

TEST(Entropy, SpreadLabelIsNeverZeroAndFitsTwentyBits) {
  for (uint32_t a = 0; a < 65536; a += 1) {
    uint32_t fl = rdma_qos_flow_label_spread(static_cast<uint16_t>(a), 0);
    ASSERT_NE(fl, 0u);
    ASSERT_LE(fl, 0xFFFFFu);
  }
}

}  // namespace
