// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Sets apply plans: only tables that differ, with the modifiers the reads use.
#include <gtest/gtest.h>

#include "rdma-qos/fabric/apply.h"

namespace rdmaqos::fabric {
namespace {

PortTables port(uint8_t num, uint16_t lid) {
  PortTables p;
  p.port = num;
  p.guid = 0x100;
  p.info.lid = lid;
  p.info.state = 4;
  p.info.vl_cap = 1;  // one data VL: SL2VL only, no arbitration
  p.info.oper_vls = 1;
  p.sl_mapping = true;
  return p;
}

Planner policy_planner(const std::string& setup) {
  auto parsed = policy::parse_policy(setup +
                                     "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\n"
                                     "end-qos-level\nend-qos-levels\n");
  EXPECT_TRUE(parsed.ok());
  return Planner(policy::parse_opensm_conf("").config, SetupScopes(parsed.policy, 0));
}

TEST(Apply, OnlyDifferingSwitchTablesAreSetWithTheirInputAndOutputPorts) {
  FabricTables f;
  NodeTables sw;
  sw.guid = 0x100;
  sw.type = policy::NodeType::kSwitch;
  sw.description = "leaf";
  sw.num_ports = 2;
  sw.ports.push_back(port(1, 9));
  sw.ports.push_back(port(2, 9));
  // OperVLs 1: every VL folds to 0; the policy table below is all VL 0 but SL 15 (dropped).
  for (auto& p : sw.ports)
    for (uint8_t in = 0; in <= 2; ++in) p.sl2vl[in] = Sl2Vl{};
  f.nodes.push_back(sw);
  auto planner = policy_planner(
      "qos-setup\nsl2vl-tables\nsl2vl-scope\nfrom: 1\nto: 2\nsl2vl-table: "
      "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,15\nend-sl2vl-scope\nend-sl2vl-tables\nend-qos-setup\n");
  auto sets = plan_sets(f, planner);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].lid, 9);
  EXPECT_EQ(sets[0].attr, kAttrSl2Vl);
  EXPECT_EQ(sets[0].mod, 0x0102u);  // input 1, output 2
  EXPECT_EQ(sets[0].data[7], 0x0F);
}

TEST(Apply, NothingIsSetWhereThePortsHoldTheIntendedTables) {
  FabricTables f;
  NodeTables ca;
  ca.guid = 0x10;
  ca.num_ports = 1;
  ca.ports.push_back(port(1, 3));
  ca.ports[0].sl2vl[0] = Sl2Vl{};  // OpenSM's default folded to one VL
  f.nodes.push_back(ca);
  EXPECT_TRUE(plan_sets(f, Planner(policy::parse_opensm_conf("").config, std::nullopt)).empty());
}

}  // namespace
}  // namespace rdmaqos::fabric
