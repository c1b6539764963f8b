// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// qos-setup scopes against ports: group, across, across-to/-from, from/to, first match wins.
#include <gtest/gtest.h>

#include "rdma-qos/fabric/setup_scopes.h"

namespace rdmaqos::fabric {
namespace {

// `groups`: more port groups.
policy::Policy parse(const std::string& setup, const std::string& groups = "") {
  const std::string text = R"(port-groups
  port-group
    name: Storage
    port-guid: 0x20
  end-port-group
  port-group
    name: Named
    port-name: "srv09 HCA-1/P2"
  end-port-group
  port-group
    name: Tenant
    pkey: 0x8020
  end-port-group
)" + groups + R"(end-port-groups
qos-setup
)" + setup + R"(end-qos-setup
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
end-qos-levels
)";
  auto r = policy::parse_policy(text);
  EXPECT_TRUE(r.ok()) << (r.diagnostics.empty() ? "" : r.diagnostics.front().message);
  return r.policy;
}

const std::string kTable1 = "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1";
const std::string kTable2 = "2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2";

PortRef ca(uint64_t guid, uint8_t port = 1, std::string desc = "ca") {
  return {guid, guid, policy::NodeType::kCa, std::move(desc), port};
}
PortRef sw(uint8_t port) {
  return {0x100, 0x100, policy::NodeType::kSwitch, "leaf", port};
}

TEST(SetupScopes, GroupSelectsItsPortsAndAcrossTheLinkedPorts) {
  SetupScopes s(parse("vlarb-tables\nvlarb-scope\ngroup: Storage\nacross: Storage\n"
                      "vlarb-high: 0:9\nend-vlarb-scope\nend-vlarb-tables\n"),
                0);
  EXPECT_TRUE(s.vlarb(ca(0x20), sw(3)));
  EXPECT_TRUE(s.vlarb(sw(3), ca(0x20)));
  EXPECT_FALSE(s.vlarb(ca(0x21), sw(4)));
  EXPECT_FALSE(s.vlarb(sw(4), ca(0x21)));
  auto c = s.vlarb(ca(0x20), sw(3));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->has_high);
  EXPECT_FALSE(c->has_low);
  ASSERT_EQ(c->high.size(), 1u);
  EXPECT_EQ(c->high[0].weight, 9);
}

TEST(SetupScopes, TheFirstMatchingScopeWins) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\ngroup: Storage\nsl2vl-table: " + kTable1 +
                      "\nend-sl2vl-scope\nsl2vl-scope\nsl2vl-table: " + kTable2 +
                      "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  auto a = s.sl2vl({ca(0x20), sw(1), 0, std::nullopt});
  auto b = s.sl2vl({ca(0x21), sw(2), 0, std::nullopt});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->table[0], 1);
  EXPECT_EQ(b->table[0], 2);
}

TEST(SetupScopes, AcrossToAndAcrossFromLookAtTheOutputAndInputLinks) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\nacross-to: Storage\nsl2vl-table: " + kTable1 +
                      "\nend-sl2vl-scope\nsl2vl-scope\nacross-from: Storage\nsl2vl-table: " +
                      kTable2 + "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  // Leaf port 3 leads to Storage: every input's table towards it.
  auto to = s.sl2vl({sw(3), ca(0x20), 5, ca(0x30)});
  ASSERT_TRUE(to);
  EXPECT_EQ(to->table[0], 1);
  // Traffic that came in from Storage (input port 3) going out of port 5.
  auto from = s.sl2vl({sw(5), ca(0x30), 3, ca(0x20)});
  ASSERT_TRUE(from);
  EXPECT_EQ(from->table[0], 2);
  EXPECT_FALSE(s.sl2vl({sw(5), ca(0x30), 4, ca(0x31)}));
}

TEST(SetupScopes, GroupAndAcrossToTogetherSelectTheGroupsPortsAndThePortsTowardsThem) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\ngroup: Storage\nacross-to: Storage\n"
                      "sl2vl-table: " +
                      kTable1 + "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  EXPECT_TRUE(s.sl2vl({ca(0x20), sw(3), 0, std::nullopt}));
  EXPECT_TRUE(s.sl2vl({sw(3), ca(0x20), 5, ca(0x30)}));
  EXPECT_FALSE(s.sl2vl({sw(5), ca(0x30), 3, ca(0x20)}));
}

TEST(SetupScopes, AcrossToWithAcrossFromIsTheTrafficFromOneGroupToTheOther) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\nacross-to: Storage\nacross-from: Named\n"
                      "sl2vl-table: " +
                      kTable1 + "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  const PortRef named = ca(0x40, 2, "srv09 HCA-1");
  EXPECT_TRUE(s.sl2vl({sw(3), ca(0x20), 4, named}));
  EXPECT_FALSE(s.sl2vl({sw(3), ca(0x20), 5, ca(0x30)}));
  EXPECT_FALSE(s.sl2vl({sw(4), named, 3, ca(0x20)}));
}

TEST(SetupScopes, FromAndToNarrowASwitchsTablesByPortNumber) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\nfrom: 1,2\nto: 5\nsl2vl-table: " + kTable1 +
                      "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  EXPECT_TRUE(s.sl2vl({sw(5), std::nullopt, 1, std::nullopt}));
  EXPECT_FALSE(s.sl2vl({sw(5), std::nullopt, 3, std::nullopt}));
  EXPECT_FALSE(s.sl2vl({sw(4), std::nullopt, 1, std::nullopt}));
}

TEST(SetupScopes, MissingSl2VlEntriesAreVlZero) {
  policy::Policy p = parse("");
  policy::Sl2VlScope scope;
  scope.sl2vl = {3, 3};
  p.setup.sl2vl_scopes.push_back(scope);
  SetupScopes s(p, 0);
  auto c = s.sl2vl({ca(0x20), std::nullopt, 0, std::nullopt});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->table[1], 3);
  EXPECT_EQ(c->table[2], 0);
  EXPECT_EQ(c->table[15], 0);
}

TEST(SetupScopes, PortNamesSelectTheNamedPortOnly) {
  SetupScopes s(parse(""), 0);
  EXPECT_TRUE(s.in_group("named", ca(0x40, 2, "srv09 HCA-1")));
  EXPECT_FALSE(s.in_group("named", ca(0x41, 1, "srv09 HCA-1")));
}

TEST(SetupScopes, NodeTypeSelfIsThePortTheReadsRanFrom) {
  auto r = policy::parse_policy(
      "port-groups\nport-group\nname: Me\nnode-type: SELF\nend-port-group\nend-port-groups\n"
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n");
  ASSERT_TRUE(r.ok());
  SetupScopes s(r.policy, 0x77);
  EXPECT_TRUE(s.in_group("Me", ca(0x77)));
  EXPECT_FALSE(s.in_group("Me", ca(0x78)));
}

PortRef member(uint64_t guid, std::vector<uint16_t> pkeys) {
  PortRef r = ca(guid);
  r.pkeys = std::move(pkeys);
  return r;
}

// A port list as read: node001 in partition 0x20 (and the default one), node002 in the
// default one only, the leaf (through its port 0) in the default one.
TEST(SetupScopes, PKeyGroupsSelectThePortsWhosePKeyTableHoldsTheirPKey) {
  SetupScopes s(parse("sl2vl-tables\nsl2vl-scope\ngroup: Tenant\nsl2vl-table: " + kTable1 +
                      "\nend-sl2vl-scope\nsl2vl-scope\nacross-to: Tenant\nsl2vl-table: " + kTable2 +
                      "\nend-sl2vl-scope\nend-sl2vl-tables\n"),
                0);
  EXPECT_TRUE(s.diagnostics().empty());
  const PortRef node001 = member(0x21, {0x20, 0x7FFF});
  const PortRef node002 = member(0x22, {0x7FFF});
  PortRef leaf = sw(3);
  leaf.pkeys = {0x7FFF};
  EXPECT_TRUE(s.in_group("Tenant", node001));
  EXPECT_FALSE(s.in_group("Tenant", node002));
  EXPECT_FALSE(s.in_group("Tenant", leaf));
  EXPECT_FALSE(s.in_group("Tenant", ca(0x21)));  // P_Keys not read: no member

  auto own = s.sl2vl({node001, leaf, 0, std::nullopt});
  ASSERT_TRUE(own);
  EXPECT_EQ(own->table, Sl2Vl({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  auto towards = s.sl2vl({leaf, node001, 1, node002});
  ASSERT_TRUE(towards);
  EXPECT_EQ(towards->table, Sl2Vl({2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_FALSE(s.sl2vl({node002, leaf, 0, std::nullopt}));
  EXPECT_FALSE(s.sl2vl({leaf, node002, 1, node001}));
}

TEST(SetupScopes, PKeyTablesAreReadOnlyWhenAScopeNamesAPKeyGroup) {
  EXPECT_TRUE(scopes_need_pkeys(
      parse("vlarb-tables\nvlarb-scope\nacross: Tenant\nvlarb-high: 0:9\nend-vlarb-scope\n"
            "end-vlarb-tables\n")));
  EXPECT_FALSE(scopes_need_pkeys(
      parse("vlarb-tables\nvlarb-scope\ngroup: Storage\nvlarb-high: 0:9\nend-vlarb-scope\n"
            "end-vlarb-tables\n")));
}

const std::string kLabGroup = "port-group\nname: Lab\npartition: LabNet\nend-port-group\n";

// A partition group is the ports whose P_Key table holds the named partition's P_Key (the
// partitions give it), as a pkey group of that P_Key.
TEST(SetupScopes, PartitionGroupsSelectThePortsHoldingTheNamedPartitionsPKey) {
  SetupScopes s(parse("vlarb-tables\nvlarb-scope\ngroup: Lab\nvlarb-high: 0:9\nend-vlarb-scope\n"
                      "end-vlarb-tables\n",
                      kLabGroup),
                0, PartitionKeys{{"Default", 0x7FFF}, {"LabNet", 0x30}});
  EXPECT_TRUE(s.diagnostics().empty());
  const PortRef lab = member(0x21, {0x30, 0x7FFF});
  const PortRef lab_only = member(0x23, {0x30});
  const PortRef other = member(0x22, {0x7FFF});
  EXPECT_TRUE(s.in_group("Lab", lab));
  EXPECT_TRUE(s.in_group("Lab", lab_only));
  EXPECT_FALSE(s.in_group("Lab", other));
  EXPECT_TRUE(s.vlarb(lab, std::nullopt));
  EXPECT_FALSE(s.vlarb(other, std::nullopt));
}

TEST(SetupScopes, PartitionGroupsSelectNoPortWithoutThePartitionsAndSaySo) {
  SetupScopes s(parse("", kLabGroup), 0);
  EXPECT_FALSE(s.in_group("Lab", member(0x21, {0x0030})));
  ASSERT_EQ(s.diagnostics().size(), 1U);
  EXPECT_NE(s.diagnostics()[0].hint.find("--partitions"), std::string::npos);
}

TEST(SetupScopes, APartitionNameThePartitionsLackSelectsNoPortAndSaysSo) {
  SetupScopes s(parse("", kLabGroup), 0, PartitionKeys{{"Default", 0x7FFF}});
  EXPECT_FALSE(s.in_group("Lab", member(0x21, {0x0030, 0x7FFF})));
  ASSERT_EQ(s.diagnostics().size(), 1U);
  EXPECT_NE(s.diagnostics()[0].message.find("'LabNet' does not exist"), std::string::npos);
}

TEST(SetupScopes, PKeyTablesAreReadForAPartitionGroupOnlyWhenAScopeNamesIt) {
  EXPECT_TRUE(scopes_need_partitions(
      parse("vlarb-tables\nvlarb-scope\nacross: Lab\nvlarb-high: 0:9\nend-vlarb-scope\n"
            "end-vlarb-tables\n",
            kLabGroup)));
  EXPECT_FALSE(scopes_need_partitions(
      parse("vlarb-tables\nvlarb-scope\ngroup: Tenant\nvlarb-high: 0:9\nend-vlarb-scope\n"
            "end-vlarb-tables\n",
            kLabGroup)));
}

}  // namespace
}  // namespace rdmaqos::fabric
