// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The comparison on hand-built fabrics: a CA linked to a switch, tables as OpenSM's defaults
// would leave them (written out here), then changed one at a time.
#include <gtest/gtest.h>

#include "rdma-qos/fabric/check.h"

namespace rdmaqos::fabric {
namespace {

policy::QosConfig defaults() {
  return policy::parse_opensm_conf("").config;
}

// OpenSM's default tables cut to a port with VL0-7 and 8-entry VLArb tables.
const Sl2Vl kDefaultSl2Vl{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
const VlArbTable kDefaultHigh{{0, 4}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {7, 0}};
const VlArbTable kDefaultLow{{0, 0}, {1, 4}, {2, 4}, {3, 4}, {4, 4}, {5, 4}, {6, 4}, {7, 4}};

PortTables port(uint8_t num, uint64_t guid) {
  PortTables p;
  p.port = num;
  p.guid = guid;
  p.info.lid = 5;
  p.info.state = 4;
  p.info.vl_cap = 4;
  p.info.oper_vls = 4;
  p.info.vlarb_high_cap = 8;
  p.info.vlarb_low_cap = 8;
  p.sl_mapping = true;
  p.sl2vl[0] = kDefaultSl2Vl;
  p.vlarb_high = kDefaultHigh;
  p.vlarb_low = kDefaultLow;
  return p;
}

FabricTables one_ca() {
  FabricTables f;
  NodeTables n;
  n.guid = 0x10;
  n.description = "srv01 HCA-1";
  n.num_ports = 1;
  n.ports.push_back(port(1, 0x11));
  f.nodes.push_back(n);
  return f;
}

TEST(Check, OpenSmDefaultTablesAreClean) {
  Planner planner(defaults(), std::nullopt);
  auto r = check_fabric(one_ca(), planner, {});
  EXPECT_EQ(r.differences(), 0u);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.ports, 1u);
  EXPECT_EQ(r.tables, 3u);
}

TEST(Check, AChangedSl2VlTableIsADifferenceWithBothTables) {
  auto f = one_ca();
  f.nodes[0].ports[0].sl2vl[0][3] = 0;
  auto r = check_fabric(f, Planner(defaults(), std::nullopt), {});
  ASSERT_EQ(r.differences(), 1u);
  EXPECT_EQ(r.exit_code(), 1);
  const Finding& d = r.findings[0];
  EXPECT_EQ(d.table, "sl2vl 0->1");
  EXPECT_EQ(d.intended, "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7");
  EXPECT_EQ(d.actual, "0,1,2,0,4,5,6,7,0,1,2,3,4,5,6,7");
  EXPECT_EQ(d.source, "opensm.conf qos_ca_sl2vl");
}

TEST(Check, UnreadTablesMakeExitStatusTwo) {
  auto f = one_ca();
  f.unread.push_back("srv01 port 1: attribute 0x0017");
  auto r = check_fabric(f, Planner(defaults(), std::nullopt), {});
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(Check, ALevelOnVl15OrOnAVlWithoutWeightIsReported) {
  auto f = one_ca();
  f.nodes[0].ports[0].sl2vl[0][5] = 15;
  f.nodes[0].ports[0].vlarb_low->at(6).weight = 0;  // VL 6: no weight anywhere
  auto r = check_fabric(f, Planner(defaults(), std::nullopt),
                        {{"Dropped", 5}, {"Starved", 6}, {"Fine", 1}});
  size_t dropped = 0, starved = 0;
  for (const auto& x : r.findings) {
    if (x.kind == FindingKind::kLevelDropped) {
      ++dropped;
      EXPECT_EQ(x.message.find("level Dropped"), 0u);
    }
    if (x.kind == FindingKind::kLevelNoWeight) {
      ++starved;
      EXPECT_EQ(x.message.find("level Starved"), 0u);
    }
  }
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(starved, 1u);
}

TEST(Check, ATableLongerThanThePortHoldsIsAWarningNotADifference) {
  auto f = one_ca();
  auto r = check_fabric(f, Planner(defaults(), std::nullopt), {});
  // OpenSM's default low table has 15 weighted entries and VLs up to 14; the port holds 8.
  bool too_long = false;
  for (const auto& x : r.findings) too_long |= x.kind == FindingKind::kTooLong;
  EXPECT_TRUE(too_long);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Check, TextJoinsASwitchPortsLikeDifferencesOverConsecutiveInputPorts) {
  CheckReport r;
  for (int in : {0, 1, 2, 4}) {
    Finding f;
    f.at.node_guid = 0x100;
    f.at.node = "leaf";
    f.at.port = 5;
    f.table = "sl2vl " + std::to_string(in) + "->5";
    f.intended = "a";
    f.actual = "b";
    f.source = "src";
    r.findings.push_back(f);
  }
  auto lines = to_lines(r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "leaf (0x100) port 5: sl2vl 0-2->5: intended a (src), actual b");
  EXPECT_EQ(lines[1], "leaf (0x100) port 5: sl2vl 4->5: intended a (src), actual b");
}

TEST(Check, ThePolicyScopeReplacesTheClassTable) {
  auto parsed = policy::parse_policy(
      "qos-setup\nsl2vl-tables\nsl2vl-scope\nsl2vl-table: "
      "1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\nend-sl2vl-scope\nend-sl2vl-tables\nend-qos-setup\n"
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n");
  ASSERT_TRUE(parsed.ok());
  Planner planner(defaults(), SetupScopes(parsed.policy, 0));
  auto r = check_fabric(one_ca(), planner, {});
  ASSERT_EQ(r.differences(), 1u);
  EXPECT_EQ(r.findings[0].intended, "1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
  EXPECT_EQ(r.findings[0].source, "policy line 3");
}

}  // namespace
}  // namespace rdmaqos::fabric
