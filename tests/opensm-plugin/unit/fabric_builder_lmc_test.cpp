// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// LMC in the model read from OpenSM's subnet: a port's whole LID range, and the forwarding of
// each LID of it, so that path-bits choose routes in the plugin as in rdma-qos-sad.
#include <gtest/gtest.h>

#include "rdma-qos/opensm-plugin/fabric_builder.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

using namespace testing;

// Switches S (LID 1) and T (LID 2) linked twice: port 2 to port 2 at 4x QDR, port 3 to port 3
// at 4x SDR. A (LID 4, LMC 0) on S port 1, B (LIDs 8-9, LMC 1) on T port 1. S sends LID 8 over
// the fast link, LID 9 over the slow one.
sad::FabricModel two_routes() {
  constexpr uint8_t kActive = 4;
  constexpr uint64_t kSwitchT = 0x400;
  FabricBuilder b;
  b.sm_port_guid(kPortA);
  auto sw = [&](uint64_t guid, uint16_t lid, uint64_t ca, uint64_t peer) {
    int s = b.node(guid, 2, "switch", 3);
    b.port(s, 0, port_info(guid, lid, kActive));
    b.port(s, 1, port_info(guid, 0, kActive, ca, 1));
    b.port(s, 2, port_info(guid, 0, kActive, peer, 2));
    rdma_qos_osmp_port slow = port_info(guid, 0, kActive, peer, 3);
    slow.link_speed_active = 1;  // SDR
    b.port(s, 3, slow);
    for (uint8_t out = 1; out <= 3; ++out)
      for (uint8_t in = 0; in <= 3; ++in)
        if (in != out) b.sl2vl(s, out, in, kSl2Vl);
    return s;
  };
  int s = sw(kSwitchGuid, 1, kNodeA, kSwitchT);
  int t = sw(kSwitchT, 2, kNodeB, kSwitchGuid);
  b.lft(s, {0xFF, 0, 2, 0xFF, 1, 0xFF, 0xFF, 0xFF, 2, 3});
  b.lft(t, {0xFF, 2, 0, 0xFF, 2, 0xFF, 0xFF, 0xFF, 1, 1});
  int a = b.node(kNodeA, 1, "host A", 1);
  b.port(a, 1, port_info(kPortA, 4, kActive, kSwitchGuid, 1));
  b.pkey(a, 1, 0xFFFF);
  b.sl2vl(a, 1, 0, kSl2Vl);
  int bn = b.node(kNodeB, 1, "host B", 1);
  rdma_qos_osmp_port pb = port_info(kPortB, 8, kActive, kSwitchT, 1);
  pb.lmc = 1;
  b.port(bn, 1, pb);
  b.pkey(bn, 1, 0xFFFF);
  b.sl2vl(bn, 1, 0, kSl2Vl);
  return b.build();
}

TEST(FabricBuilderLmc, EveryLidOfTheRangeNamesThePort) {
  sad::FabricModel m = two_routes();
  auto b = m.by_guid(kPortB);
  ASSERT_TRUE(b);
  EXPECT_EQ(m.port(*b).lmc, 1);
  EXPECT_EQ(m.by_lid(8), b);
  EXPECT_EQ(m.by_lid(9), b);
  EXPECT_FALSE(m.by_lid(10));
  EXPECT_EQ(m.subnet_lmc(), 1);
}

TEST(FabricBuilderLmc, EachLidIsWalkedOverItsOwnForwardingEntries) {
  sad::FabricModel m = two_routes();
  auto a = m.by_guid(kPortA);
  ASSERT_TRUE(a);
  auto fast = m.walk(*a, 8);
  auto slow = m.walk(*a, 9);
  ASSERT_TRUE(fast);
  ASSERT_TRUE(slow);
  EXPECT_EQ(fast->rate, 7);  // 4x QDR
  EXPECT_EQ(slow->rate, 3);  // 4x SDR
  EXPECT_EQ(fast->hops, 2);
  EXPECT_EQ(slow->hops, 2);
}

}  // namespace
}  // namespace rdmaqos::osmp
