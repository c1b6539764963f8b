// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The share view from tables read: SLs on one VL split its share, VL 15 is dropped, and each
// class shows its most common tables.
#include <gtest/gtest.h>

#include "rdma-qos/fabric/share.h"

namespace rdmaqos::fabric {
namespace {

PortTables ca_port(const Sl2Vl& sl2vl, VlArbTable low) {
  PortTables p;
  p.port = 1;
  p.info.state = 4;
  p.info.vl_cap = 4;
  p.info.oper_vls = 4;
  p.sl_mapping = true;
  p.sl2vl[0] = sl2vl;
  p.vlarb_high = VlArbTable{};
  p.vlarb_low = std::move(low);
  return p;
}

FabricTables cas(int n, const Sl2Vl& sl2vl, const VlArbTable& low) {
  FabricTables f;
  for (int i = 0; i < n; ++i) {
    NodeTables node;
    node.guid = static_cast<uint64_t>(i + 1);
    node.num_ports = 1;
    node.ports.push_back(ca_port(sl2vl, low));
    f.nodes.push_back(node);
  }
  return f;
}

TEST(Share, WeightsSplitTheLinkAndSlsOnOneVlSplitItsShare) {
  // VL 0 weight 3, VL 1 weight 1: 75% and 25%; SLs 0 and 1 share VL 0; SL 15 is dropped.
  Sl2Vl t{0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 15};
  auto v = share_view(cas(2, t, {{0, 3}, {1, 1}}));
  ASSERT_EQ(v.classes.size(), 1u);
  const ClassShare& c = v.classes[0];
  EXPECT_EQ(c.port_class, policy::PortClass::kCa);
  EXPECT_EQ(c.ports, 2u);
  EXPECT_EQ(c.others, 0u);
  EXPECT_NEAR(c.sls[0].share, 0.375, 1e-9);
  EXPECT_NEAR(c.sls[1].share, 0.375, 1e-9);
  EXPECT_NEAR(c.sls[2].share, 0.25 / 13, 1e-9);
  EXPECT_EQ(c.sls[15].vl, 15);
  EXPECT_EQ(c.sls[15].share, 0.0);
}

TEST(Share, TheMostCommonTablesOfAClassAreShownAndTheOthersCounted) {
  Sl2Vl same{};
  auto f = cas(3, same, {{0, 1}});
  f.nodes[2].ports[0].vlarb_low = VlArbTable{{0, 9}, {1, 9}};
  auto v = share_view(f);
  ASSERT_EQ(v.classes.size(), 1u);
  EXPECT_EQ(v.classes[0].ports, 3u);
  EXPECT_EQ(v.classes[0].others, 1u);
  EXPECT_NEAR(v.classes[0].sls[0].share, 1.0 / 16, 1e-9);
}

}  // namespace
}  // namespace rdmaqos::fabric
