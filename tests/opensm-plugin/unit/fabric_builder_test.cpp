// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model the plugin builds from OpenSM's subnet: the same model discovery builds from
// SMPs (the answer engine's one input), from facts written out in tiny_subnet.h.
#include <gtest/gtest.h>

#include "rdma-qos/opensm-plugin/fabric_builder.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

using namespace testing;

sad::FabricModel tiny() {
  FabricBuilder b;
  feed_tiny_subnet(b);
  return b.build();
}

TEST(FabricBuilder, EndpointsAreCaPortsAndSwitchPortZeroByLid) {
  sad::FabricModel m = tiny();
  EXPECT_EQ(m.endpoints().size(), 3u);
  auto a = m.by_lid(2);
  ASSERT_TRUE(a);
  EXPECT_EQ(m.port(*a).guid, kPortA);
  auto s = m.by_lid(1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->port, 0);
  EXPECT_EQ(m.port(*s).guid, kSwitchGuid);
  EXPECT_EQ(m.by_guid(kPortB), m.by_lid(3));
  EXPECT_EQ(m.subnet_prefix, kPrefix);
  EXPECT_EQ(m.sm_port_guid, kPortA);
}

TEST(FabricBuilder, LinksFollowActivePortsToTheirPeers) {
  sad::FabricModel m = tiny();
  const sad::PortModel& a = m.port(*m.by_lid(2));
  ASSERT_GE(a.peer_node, 0);
  EXPECT_EQ(m.nodes[static_cast<size_t>(a.peer_node)].guid, kSwitchGuid);
  EXPECT_EQ(a.peer_port, 1);
  const sad::PortModel& down = m.nodes[0].ports[3];
  EXPECT_TRUE(down.present);
  EXPECT_EQ(down.peer_node, -1);
}

TEST(FabricBuilder, RateAndMtuComeFromPortInfo) {
  sad::FabricModel m = tiny();
  const sad::PortModel& a = m.port(*m.by_lid(2));
  EXPECT_EQ(a.mtu_cap, 4);
  EXPECT_EQ(a.rate, 7);  // 4x QDR: 40 Gb/s
}

// EDR (LinkSpeedExtActive 2) counts only where the governing CapabilityMask has
// IsExtendedSpeedsSupported (bit 14): a CA port's own, port 0's for every port of a switch.
TEST(FabricBuilder, ExtendedSpeedsCountWhereTheGoverningCapabilityMaskSaysSo) {
  constexpr uint32_t kExtended = 1u << 14;
  constexpr uint8_t kActive = 4;
  auto edr = [](rdma_qos_osmp_port p, uint32_t capmask) {
    p.link_speed_ext_active = 2;
    p.capability_mask = capmask;
    return p;
  };
  FabricBuilder b;
  int s = b.node(kSwitchGuid, 2, "switch S", 2);
  b.port(s, 0, edr(port_info(kSwitchGuid, 1, kActive), kExtended));
  b.port(s, 1, edr(port_info(kSwitchGuid, 0, kActive, kNodeA, 1), 0));
  b.port(s, 2, edr(port_info(kSwitchGuid, 0, kActive, kNodeB, 1), 0));
  b.lft(s, {0xFF, 0, 1, 2});
  int a = b.node(kNodeA, 1, "host A", 1);
  b.port(a, 1, edr(port_info(kPortA, 2, kActive, kSwitchGuid, 1), kExtended));
  int bn = b.node(kNodeB, 1, "host B", 1);
  b.port(bn, 1, edr(port_info(kPortB, 3, kActive, kSwitchGuid, 2), 0));
  sad::FabricModel m = b.build();
  EXPECT_EQ(m.nodes[0].ports[1].rate, 16);   // switch port: port 0 says extended, 4x EDR 100G
  EXPECT_EQ(m.port(*m.by_lid(2)).rate, 16);  // CA A: its own mask says extended
  EXPECT_EQ(m.port(*m.by_lid(3)).rate, 7);   // CA B: no extended speeds, 4x QDR 40G
  EXPECT_EQ(m.port(*m.by_lid(2)).capability_mask, kExtended);
}

TEST(FabricBuilder, PkeyTablesSkipEmptySlots) {
  sad::FabricModel m = tiny();
  EXPECT_EQ(m.port(*m.by_lid(2)).pkeys, (std::vector<uint16_t>{0xFFFF}));
  EXPECT_EQ(m.port(*m.by_lid(3)).pkeys, (std::vector<uint16_t>{0x7FFF}));
  EXPECT_EQ(m.port(*m.by_lid(1)).pkeys, (std::vector<uint16_t>{0xFFFF}));
}

TEST(FabricBuilder, Sl2VlTablesAreDecodedPerInputPort) {
  sad::FabricModel m = tiny();
  const sad::PortModel& a = m.port(*m.by_lid(2));
  ASSERT_EQ(a.sl2vl.size(), 1u);
  EXPECT_EQ(a.sl2vl[0][14], 0);
  EXPECT_EQ(a.sl2vl[0][15], 15);
  const sad::PortModel& out1 = m.nodes[0].ports[1];
  ASSERT_EQ(out1.sl2vl.size(), 4u);  // inputs 0..3
  EXPECT_EQ(out1.sl2vl[2][15], 15);
  EXPECT_TRUE(m.nodes[0].ports[3].sl2vl.empty());  // a down port has none
}

TEST(FabricBuilder, PathsWalkTheSwitchLft) {
  sad::FabricModel m = tiny();
  auto walk = m.walk(*m.by_lid(2), 3);
  ASSERT_TRUE(walk);
  EXPECT_EQ(walk->hops, 1);
  EXPECT_EQ(walk->links, 2);
  EXPECT_EQ(walk->valid_sls, 0x7FFF);  // SL 15 on VL 15
}

TEST(FabricBuilder, ACaPortWithoutLidHasNoTables) {
  FabricBuilder b;
  int n = b.node(0x900, 1, "no LID", 1);
  b.port(n, 1, port_info(0x901, 0, 4));
  b.pkey(n, 1, 0xFFFF);
  sad::FabricModel m = b.build();
  EXPECT_TRUE(m.endpoints().empty() || m.nodes[0].ports[1].pkeys.empty());
  EXPECT_TRUE(m.nodes[0].ports[1].pkeys.empty());
}

TEST(FabricBuilder, FactsAboutUnknownNodesOrPortsAreIgnored) {
  FabricBuilder b;
  b.pkey(7, 1, 0xFFFF);
  int n = b.node(0x900, 1, "x", 1);
  b.port(n, 9, port_info(0x901, 5, 4));
  sad::FabricModel m = b.build();
  ASSERT_EQ(m.nodes.size(), 1u);
  EXPECT_FALSE(m.nodes[0].ports[1].present);
}

// OpenSM's path handlers answer for ports whatever their state; the model records which ports
// and links are not Active so that queries touching them are left to OpenSM.
sad::FabricModel tiny_with(uint8_t b_state, uint8_t s2_state) {
  FabricBuilder b;
  feed_tiny_subnet(b, 1, true, b_state, s2_state);
  return b.build();
}

TEST(FabricBuilder, AllPortsActiveMeansNoInactivePorts) {
  sad::FabricModel m = tiny();  // S port 3 is Down with no peer: no path can cross it
  EXPECT_TRUE(m.inactive_endpoints.empty());
  EXPECT_EQ(m.inactive_switch_ports, 0u);
}

TEST(FabricBuilder, ACaPortNotActiveIsAnInactiveEndpoint) {
  for (uint8_t state : {kInit, kArmed, uint8_t{1}}) {
    sad::FabricModel m = tiny_with(state, kActive);
    EXPECT_EQ(m.inactive_endpoints, std::vector<uint64_t>{kPortB}) << int{state};
    EXPECT_EQ(m.inactive_switch_ports, 0u);
    // The port keeps its LID (OpenSM answers for it by LID) and gets no link or P_Keys.
    const sad::PortModel& bp = m.port(*m.by_guid(kPortB));
    EXPECT_EQ(bp.lid, 3);
    EXPECT_EQ(bp.peer_node, -1);
    EXPECT_TRUE(bp.pkeys.empty());
  }
}

TEST(FabricBuilder, TheCaBehindASwitchPortNotActiveIsAnInactiveEndpoint) {
  sad::FabricModel m = tiny_with(kActive, kArmed);
  EXPECT_EQ(m.inactive_endpoints, std::vector<uint64_t>{kPortB});
  EXPECT_EQ(m.inactive_switch_ports, 0u);
}

TEST(FabricBuilder, BothEndsOfALinkNotActiveNameTheCaOnce) {
  sad::FabricModel m = tiny_with(kInit, kInit);
  EXPECT_EQ(m.inactive_endpoints, std::vector<uint64_t>{kPortB});
}

TEST(FabricBuilder, ALinkBetweenSwitchesNotActiveIsCounted) {
  FabricBuilder b;
  int s = b.node(0x100, 2, "S", 2);
  int t = b.node(0x400, 2, "T", 2);
  b.port(s, 0, port_info(0x100, 1, kActive));
  b.port(t, 0, port_info(0x400, 4, kActive));
  b.port(s, 1, port_info(0x100, 0, kArmed, 0x400, 1));
  b.port(t, 1, port_info(0x400, 0, kActive, 0x100, 1));
  b.port(s, 2, port_info(0x100, 0, kInit));  // no peer OpenSM knows
  sad::FabricModel m = b.build();
  EXPECT_EQ(m.inactive_switch_ports, 1u);
  EXPECT_TRUE(m.inactive_endpoints.empty());
}

}  // namespace
}  // namespace rdmaqos::osmp
