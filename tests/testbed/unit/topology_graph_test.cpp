// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The looped-fabric generator: numbering, the links each shape makes and the ibsim text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::testbed {
namespace {

using ::testing::HasSubstr;

// Links per switch pair, ignoring direction.
std::map<std::pair<int, int>, int> link_count(const SwitchGraphSpec& spec) {
  std::map<std::pair<int, int>, int> out;
  for (auto [a, b] : spec.links) ++out[{std::min(a, b), std::max(a, b)}];
  return out;
}

// Switches reachable from switch 0 over the spec's links.
size_t reachable(const SwitchGraphSpec& spec) {
  std::set<int> seen{0};
  for (bool grew = true; grew;) {
    grew = false;
    for (auto [a, b] : spec.links) {
      if (seen.count(a) != seen.count(b)) {
        seen.insert(a);
        seen.insert(b);
        grew = true;
      }
    }
  }
  return seen.size();
}

TEST(TopologyGraph, ARingLinksEachSwitchToTheNext) {
  SwitchGraphSpec spec = ring_spec(6);
  EXPECT_EQ(spec.links.size(), 6u);
  auto links = link_count(spec);
  EXPECT_EQ(links.count({0, 1}), 1u);
  EXPECT_EQ(links.count({0, 5}), 1u);
  EXPECT_EQ(links.count({0, 3}), 0u);
}

TEST(TopologyGraph, ATorusHasFourLinksPerSwitchAndAMeshFewerAtTheEdges) {
  SwitchGraphSpec torus = torus_spec(3, 4);
  EXPECT_EQ(torus.links.size(), 24u);  // 2 per switch
  SwitchGraphSpec mesh = mesh_spec(3, 4);
  EXPECT_EQ(mesh.links.size(), 2u * 4 + 3u * 3);  // rows of 2 links, columns of 3
  EXPECT_THROW(torus_spec(2, 3), std::invalid_argument);
}

TEST(TopologyGraph, ADragonflyIsAllToAllInGroupsWithOneGlobalLinkPerGroupPair) {
  SwitchGraphSpec spec = dragonfly_spec(4, 3);
  EXPECT_EQ(spec.switches, 12);
  EXPECT_EQ(spec.links.size(), 4u * 3 + 6u);  // 3 local links per group, C(4,2) global
  EXPECT_EQ(reachable(spec), 12u);
}

TEST(TopologyGraph, ARandomGraphIsConnectedAndRepeatsForItsSeed) {
  SwitchGraphSpec a = random_spec(10, 5, 42), b = random_spec(10, 5, 42);
  EXPECT_EQ(a.links, b.links);
  EXPECT_EQ(a.links.size(), 14u);
  EXPECT_EQ(reachable(a), 10u);
}

TEST(TopologyGraph, NodesAreNumberedSmFirstThenCasThenSwitches) {
  Topology t = make_switch_graph(ring_spec(4, 2));
  EXPECT_EQ(t.sm_node().id, "sm01");
  EXPECT_EQ(t.sm_node().lid, 1);
  ASSERT_EQ(t.cas().size(), 8u);
  EXPECT_EQ(t.node("node001").lid, 2);
  EXPECT_EQ(t.node("node003").leaf, "sw02");
  EXPECT_EQ(t.node("sw01").lid, 10);
  EXPECT_EQ(t.node("sw04").lid, 13);
}

TEST(TopologyGraph, TheNetfileLinksBothEndsOnMatchingPorts) {
  Topology t = make_switch_graph(ring_spec(3, 1));
  // sw01: [1] sm01, [2] node001, [3] sw02, [4] sw03; sw02: [1] node002, [2] sw01, [3] sw03.
  EXPECT_THAT(t.netfile, HasSubstr("[1] \"sm01\"[1]"));
  EXPECT_THAT(t.netfile, HasSubstr("[1] \"sw01\"[2] w=2 s=4 lid 2"));
  EXPECT_THAT(t.netfile, HasSubstr("[3] \"sw02\"[2]"));
  EXPECT_THAT(t.netfile, HasSubstr("[2] \"sw01\"[3]"));
  EXPECT_THAT(t.netfile, HasSubstr("[4] \"sw03\"[3]"));
}

TEST(TopologyGraph, LidsAreSpacedForTheLmc) {
  SwitchGraphSpec spec = ring_spec(3, 1);
  spec.lmc = 2;
  Topology t = make_switch_graph(spec);
  EXPECT_EQ(t.node("node001").lid, 8);
  EXPECT_EQ(t.node("sw01").lid, 20);
}

TEST(TopologyGraph, LinksNamingNoSwitchAreRefused) {
  SwitchGraphSpec spec = ring_spec(3);
  spec.links.emplace_back(1, 1);
  EXPECT_THROW(make_switch_graph(spec), std::invalid_argument);
  spec.links.back() = {0, 3};
  EXPECT_THROW(make_switch_graph(spec), std::invalid_argument);
}

}  // namespace
}  // namespace rdmaqos::testbed
