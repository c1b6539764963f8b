// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The partitions.conf and net-file readers that give the policy its fabric.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "rdma-qos/policy/fabric.h"

namespace rdmaqos::policy {
namespace {

constexpr const char* kNet =
    "caguid=0x100\n"
    "Ca 1 \"sm01\" # \"sm01 HCA-1\"\n"
    "[1] \"leaf01\"[1] w=2 s=4 lid 1\n"
    "\n"
    "caguid=0x200\n"
    "Ca 2 \"node001\" # \"node001 HCA-1\"\n"
    "[1] \"leaf01\"[2] lid 2\n"
    "[2](2ff) \"leaf01\"[3] lid 3\n"
    "\n"
    "switchguid=0x900\n"
    "Switch 8 \"leaf01\" # \"leaf01 switch\" lid 10\n"
    "[1] \"sm01\"[1]\n";

TEST(PolicyFabric, NetFileGivesNodesPortsAndTheSmPort) {
  FabricResult r = parse_net_file(kNet);
  EXPECT_TRUE(r.diagnostics.empty());
  const Fabric& f = r.fabric;
  ASSERT_EQ(f.nodes.size(), 3u);
  EXPECT_EQ(f.nodes[0].description, "sm01 HCA-1");
  EXPECT_EQ(f.nodes[1].port_guids, (std::vector<std::pair<int, uint64_t>>{{1, 0x201}, {2, 0x2ff}}));
  EXPECT_EQ(f.nodes[1].num_ports, 2);
  EXPECT_EQ(f.nodes[2].type, NodeType::kSwitch);
  EXPECT_EQ(f.nodes[2].num_ports, 8);
  EXPECT_EQ(f.nodes[2].port_guids, (std::vector<std::pair<int, uint64_t>>{{0, 0x900}}));
  EXPECT_EQ(f.sm_port_guid, 0x101u);
  ASSERT_EQ(f.partitions.size(), 1u);
  EXPECT_EQ(f.partitions[0].pkey, 0x7FFF);
  EXPECT_EQ(f.partitions[0].full_members(), 4);
}

TEST(PolicyFabric, PartitionsWithMembershipFlagsAndSpecialMembers) {
  Fabric f = parse_net_file(kNet).fabric;
  PartitionsResult r = parse_partitions(
      "# comment\nDefault=0x7fff, ipoib : ALL=full ;\n"
      "Compute=0x8010, ipoib, sl=1, defmember=full : 0x201, 0x2ff=limited;\n"
      "Mgmt=0x40 : SELF, ALL_SWITCHES=both ;\nCas=0x50 : ALL_CAS;\n",
      f);
  EXPECT_TRUE(r.diagnostics.empty());
  ASSERT_EQ(r.partitions.size(), 4u);
  const Partition& c = r.partitions[1];
  EXPECT_EQ(c.name, "Compute");
  EXPECT_EQ(c.pkey, 0x10);
  EXPECT_TRUE(c.ipoib);
  EXPECT_EQ(c.sl, 1);
  ASSERT_EQ(c.members.size(), 2u);
  EXPECT_TRUE(c.members[0].full);
  EXPECT_FALSE(c.members[1].full);
  const Partition& m = r.partitions[2];
  ASSERT_EQ(m.members.size(), 2u);
  EXPECT_EQ(m.members[0].port_guid, 0x101u);
  EXPECT_FALSE(m.members[0].full);  // default membership is limited
  EXPECT_EQ(m.members[1].port_guid, 0x900u);
  EXPECT_TRUE(m.members[1].full);
  EXPECT_EQ(r.partitions[3].members.size(), 3u);
}

// A port named twice in a partition is one member with the membership named last, as OpenSM
// overwrites it; full_members() counts ports, not mentions.
TEST(PolicyFabric, APortNamedTwiceTakesItsLastMembership) {
  Fabric f = parse_net_file(kNet).fabric;
  PartitionsResult r = parse_partitions(
      "A=0x10 : ALL=limited, 0x201=full ;\n"
      "B=0x20 : 0x201=full, ALL=limited ;\n"
      "C=0x30 : ALL=full, ALL=full ;\n",
      f);
  EXPECT_TRUE(r.diagnostics.empty());
  ASSERT_EQ(r.partitions.size(), 3u);
  const Partition& a = r.partitions[0];
  ASSERT_EQ(a.members.size(), 4u);  // sm01's port, node001's two, leaf01's port 0
  EXPECT_EQ(a.full_members(), 1);
  EXPECT_EQ(a.members[1].port_guid, 0x201u);
  EXPECT_TRUE(a.members[1].full);
  const Partition& b = r.partitions[1];
  ASSERT_EQ(b.members.size(), 4u);
  EXPECT_EQ(b.members[0].port_guid, 0x201u);  // its first place kept
  EXPECT_EQ(b.full_members(), 0);
  EXPECT_EQ(r.partitions[2].members.size(), 4u);
  EXPECT_EQ(r.partitions[2].full_members(), 4);
}

// A second statement for a P_Key adds to the first's partition, as OpenSM does: one partition,
// the first name, the members of both, the later SL; the IPoIB group keeps the first's SL and MTU.
TEST(PolicyFabric, ASecondDefinitionOfAPKeyAddsToTheFirst) {
  Fabric f = parse_net_file(kNet).fabric;
  PartitionsResult r = parse_partitions(
      "Compute=0x10, ipoib, sl=1, mtu=4 : 0x201=full ;\n"
      "Other=0x8010, ipoib, mtu=5 : 0x2ff=full, 0x201=limited ;\n"
      "Storage=0x20, sl=2 : 0x201 ;\n"
      "Late=0x20, ipoib, sl=3, mtu=2 : 0x2ff ;\n",
      f);
  EXPECT_TRUE(r.diagnostics.empty());
  ASSERT_EQ(r.partitions.size(), 2u);
  const Partition& c = r.partitions[0];
  EXPECT_EQ(c.name, "Compute");
  EXPECT_EQ(c.pkey, 0x10);
  ASSERT_EQ(c.members.size(), 2u);
  EXPECT_EQ(c.members[0].port_guid, 0x201u);
  EXPECT_FALSE(c.members[0].full);  // named again, limited
  EXPECT_TRUE(c.members[1].full);
  EXPECT_EQ(c.sl, std::nullopt);  // the later statement gives none: OpenSM's default, 0
  EXPECT_TRUE(c.ipoib);
  EXPECT_EQ(c.ipoib_group_sl, 1);  // the group was made with the first statement's
  EXPECT_EQ(c.mtu, 4);
  const Partition& s = r.partitions[1];
  EXPECT_EQ(s.name, "Storage");
  EXPECT_EQ(s.sl, 3);
  EXPECT_TRUE(s.ipoib);  // its group made by the later statement, with that one's values
  EXPECT_EQ(s.ipoib_group_sl, std::nullopt);
  EXPECT_EQ(s.mtu, 2);
}

TEST(PolicyFabric, UnknownMemberAndMissingSemicolonAreErrors) {
  Fabric f = parse_net_file(kNet).fabric;
  PartitionsResult r = parse_partitions("A=0x10 : bogus;\nB=0x20 : ALL", f);
  ASSERT_EQ(r.diagnostics.size(), 2u);
  EXPECT_EQ(format_diagnostic(r.diagnostics[0], "parts"),
            "parts:1:1: error: unknown partition member 'bogus'");
  EXPECT_EQ(format_diagnostic(r.diagnostics[1], "parts"),
            "parts:2:1: error: partition definition does not end with ';'");
}

// Each statement's location is counted on from the one before. Counting from the start of the
// file for every statement was quadratic: a tenth of this file took 114 s in the sanitizer
// build, and a fuzzer's input of many ';' ran at a fraction of the speed of others.
TEST(PolicyFabric, ManyPartitionsOnOneLineKeepTheirColumns) {
  constexpr int kCount = 200000;
  std::string text = "\n";
  for (int i = 0; i < kCount; ++i) text += "P=0x10 : bogus; ";
  PartitionsResult r = parse_partitions(text, Fabric{});
  ASSERT_EQ(r.diagnostics.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(r.diagnostics[1].location.line, 2);
  EXPECT_EQ(r.diagnostics[1].location.column, 17);
  EXPECT_EQ(r.diagnostics.back().location.line, 2);
  EXPECT_EQ(r.diagnostics.back().location.column, 16 * (kCount - 1) + 1);
}

// A port count or port number outside NodeInfo's 8 bits is refused with the line, never
// allocated (a fuzzer's "Ca 50010000" once asked for gigabytes of ports).
TEST(PolicyFabric, NetFilePortCountsOutsideEightBitsAreRefused) {
  FabricResult r = parse_net_file(
      "caguid=0x100\n"
      "Ca 50010000 \"big\" # \"big HCA-1\"\n"
      "caguid=0x200\n"
      "Ca 2 \"ok\" # \"ok HCA-1\"\n"
      "[99999](2ff) \"s\"[1]\n"
      "[1](201) \"s\"[2]\n");
  ASSERT_EQ(r.diagnostics.size(), 2u);
  EXPECT_EQ(r.diagnostics[0].location.line, 2);
  EXPECT_NE(r.diagnostics[0].message.find("50010000"), std::string::npos);
  EXPECT_EQ(r.diagnostics[1].location.line, 5);
  ASSERT_EQ(r.fabric.nodes.size(), 2u);
  EXPECT_LE(r.fabric.nodes[0].port_guids.size(), 1u);
  EXPECT_EQ(r.fabric.nodes[1].port_guids, (std::vector<std::pair<int, uint64_t>>{{1, 0x201}}));
}

}  // namespace
}  // namespace rdmaqos::policy
