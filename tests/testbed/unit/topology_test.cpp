// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fat-tree generator: numbering, descriptions and the ibsim text it writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::testbed {
namespace {

using ::testing::HasSubstr;

TEST(Topology, SmCaComesFirstWithLidOne) {
  Topology t = make_fat_tree({});
  EXPECT_EQ(t.sm_node().id, "sm01");
  EXPECT_EQ(t.sm_node().lid, 1);
  EXPECT_EQ(t.netfile.find("Ca 1 \"sm01\""), t.netfile.find("Ca "));
}

TEST(Topology, ComputeCasAreNumberedFromLidTwo) {
  FatTreeSpec spec;
  spec.cas = 17;
  Topology t = make_fat_tree(spec);
  ASSERT_EQ(t.cas().size(), 17u);
  EXPECT_EQ(t.node("node017").lid, 18);
  EXPECT_EQ(t.node("node017").description, "node017 HCA-1");
  EXPECT_EQ(t.node("node001").lid, 2);
}

TEST(Topology, LeavesAndSpinesFollowTheCas) {
  FatTreeSpec spec;
  spec.cas = 9;  // 3 leaves of 4
  spec.spines = 2;
  Topology t = make_fat_tree(spec);
  EXPECT_EQ(t.node("leaf01").lid, 11);
  EXPECT_EQ(t.node("leaf03").lid, 13);
  EXPECT_EQ(t.node("spine02").lid, 15);
  EXPECT_EQ(t.node("node009").leaf, "leaf03");
  EXPECT_THROW(t.node("leaf04"), std::out_of_range);
}

TEST(Topology, PortGuidIsNodeGuidPlusOneAndUnique) {
  Topology t = make_fat_tree({});
  for (const auto* ca : t.cas()) EXPECT_EQ(ca->port_guid, ca->node_guid + 1);
  for (size_t i = 0; i < t.nodes.size(); ++i)
    for (size_t j = i + 1; j < t.nodes.size(); ++j)
      EXPECT_NE(t.nodes[i].node_guid, t.nodes[j].node_guid);
}

TEST(Topology, LinksCycleThroughTheMix) {
  Topology t = make_fat_tree({});
  EXPECT_EQ(link_gbps(t.node("node001").link), 40);
  EXPECT_EQ(link_gbps(t.node("node002").link), 20);
  EXPECT_EQ(link_gbps(t.node("node003").link), 2.5);
  EXPECT_EQ(link_gbps(t.node("node004").link), 10);
  EXPECT_EQ(link_gbps(t.node("node005").link), 60);
  EXPECT_EQ(link_gbps(t.node("node006").link), 40);
}

TEST(Topology, BothEndsOfALinkCarryTheSameOptions) {
  Topology t = make_fat_tree({});
  // node003 is 1x SDR: w=1 s=1 on the CA's port and on leaf01's port 4.
  EXPECT_THAT(t.netfile, HasSubstr("[1] \"leaf01\"[4] w=1 s=1 lid 4"));
  EXPECT_THAT(t.netfile, HasSubstr("[4] \"node003\"[1] w=1 s=1"));
}

TEST(Topology, RateCodesAreIbaCodes) {
  EXPECT_EQ(link_rate_code({Width::k1x, Speed::kSdr}), 2);
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kSdr}), 3);
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kDdr}), 6);
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kQdr}), 7);
  EXPECT_EQ(link_rate_code({Width::k12x, Speed::kDdr}), 8);
  EXPECT_EQ(link_rate_code({Width::k12x, Speed::kQdr}), 10);
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kFdr}), 12);   // 56G
  EXPECT_EQ(link_rate_code({Width::k2x, Speed::kFdr}), 19);   // 28G
  EXPECT_EQ(link_rate_code({Width::k1x, Speed::kEdr}), 15);   // 25G
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kEdr}), 16);   // 100G
  EXPECT_EQ(link_rate_code({Width::k4x, Speed::kHdr}), 17);   // 200G
  EXPECT_EQ(link_rate_code({Width::k8x, Speed::kHdr}), 21);   // 400G
  EXPECT_EQ(link_rate_code({Width::k12x, Speed::kHdr}), 22);  // 600G
}

TEST(Topology, RejectsEmptyFabric) {
  FatTreeSpec spec;
  spec.cas = 0;
  EXPECT_THROW(make_fat_tree(spec), std::invalid_argument);
}

TEST(Topology, ExtendedSpeedsEnableTheBaseSpeedsAndOneExtendedBit) {
  EXPECT_EQ(port_options({Width::k4x, Speed::kQdr}), "w=2 s=4");
  EXPECT_EQ(port_options({Width::k4x, Speed::kFdr}), "w=2 s=7 e=1");
  EXPECT_EQ(port_options({Width::k2x, Speed::kEdr}), "w=16 s=7 e=2");
  EXPECT_EQ(port_options({Width::k12x, Speed::kHdr}), "w=8 s=7 e=4");
}

}  // namespace
}  // namespace rdmaqos::testbed
