// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// torus-2QoS.conf for generated tori: the radices, and a seed whose links the fabric really has.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "rdma-qos/testbed/topology.h"
#include "rdma-qos/testbed/torus_2qos_conf.h"

namespace rdmaqos::testbed {
namespace {

// make_switch_graph gives switch s the node GUID 0x0002c90300e00000 + s.
std::string guid(int s) {
  return fmt::format("0x{:x}", 0x0002c90300e00000ULL + static_cast<uint64_t>(s));
}

bool linked(const SwitchGraphSpec& spec, int a, int b) {
  return std::any_of(spec.links.begin(), spec.links.end(), [&](auto link) {
    return link == std::pair{a, b} || link == std::pair{b, a};
  });
}

TEST(Torus2QosConf, A2DTorusIsSeededAtSwitchZeroInBothDirectionsOfXAndY) {
  // 4x4: switch (i, j) is j * 4 + i, so (0, 0)'s neighbours are 1, 3 (x) and 4, 12 (y).
  const std::string conf = torus_2qos_conf(make_switch_graph(torus_spec(4, 4)), {4, 4, 1});
  EXPECT_EQ(conf,
            "torus 4 4 1\n"
            "xp_link " +
                guid(0) + " " + guid(1) + "\n" + "xm_link " + guid(0) + " " + guid(3) + "\n" +
                "yp_link " + guid(0) + " " + guid(4) + "\n" + "ym_link " + guid(0) + " " +
                guid(12) + "\n");
}

TEST(Torus2QosConf, A3DTorusSeedsZToo) {
  // 3x3x3: switch (0, 0, 1) is 9 and (0, 0, 2) is 18.
  const std::string conf = torus_2qos_conf(make_switch_graph(torus3d_spec(3, 3, 3)), {3, 3, 3});
  EXPECT_EQ(conf.substr(0, conf.find('\n')), "torus 3 3 3");
  EXPECT_NE(conf.find("zp_link " + guid(0) + " " + guid(9) + "\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("zm_link " + guid(0) + " " + guid(18) + "\n"), std::string::npos) << conf;
}

TEST(Torus2QosConf, EverySeedLinkIsALinkOfTheFabric) {
  for (auto [spec, radix] : {std::pair{torus_spec(3, 3), TorusRadix{3, 3, 1}},
                             std::pair{torus_spec(5, 4), TorusRadix{5, 4, 1}},
                             std::pair{torus3d_spec(3, 4, 3), TorusRadix{3, 4, 3}},
                             std::pair{mesh_spec(4, 3), TorusRadix{4, 3, 1, true}}}) {
    std::istringstream in(torus_2qos_conf(make_switch_graph(spec), radix));
    std::string keyword, from, to;
    std::getline(in, keyword);  // the radices
    int seeds = 0;
    while (in >> keyword >> from >> to) {
      const int a = static_cast<int>(std::stoull(from, nullptr, 16) - 0x0002c90300e00000ULL);
      const int b = static_cast<int>(std::stoull(to, nullptr, 16) - 0x0002c90300e00000ULL);
      EXPECT_EQ(a, 0) << keyword;
      EXPECT_TRUE(linked(spec, a, b)) << keyword << " " << from << " " << to;
      ++seeds;
    }
    EXPECT_EQ(seeds, (radix.z > 1 ? 6 : 4) / (radix.mesh ? 2 : 1));
  }
}

TEST(Torus2QosConf, AMeshIsSeededAtItsCornerInThePlusDirections) {
  // 4x3 mesh: (0, 0)'s neighbours are 1 (x) and 4 (y); nothing wraps to 3 or 8.
  EXPECT_EQ(torus_2qos_conf(make_switch_graph(mesh_spec(4, 3)), {4, 3, 1, true}),
            "mesh 4 3 1\nxp_link " + guid(0) + " " + guid(1) + "\nyp_link " + guid(0) + " " +
                guid(4) + "\n");
}

TEST(Torus2QosConf, A3DTorusHasSixNeighboursPerSwitch) {
  const SwitchGraphSpec spec = torus3d_spec(3, 3, 3);
  EXPECT_EQ(spec.switches, 27);
  EXPECT_EQ(spec.links.size(), 81u);  // 3 per switch
  EXPECT_TRUE(linked(spec, 0, 1) && linked(spec, 0, 2) && linked(spec, 0, 3) &&
              linked(spec, 0, 6) && linked(spec, 0, 9) && linked(spec, 0, 18));
  EXPECT_THROW(torus3d_spec(3, 3, 2), std::invalid_argument);
}

}  // namespace
}  // namespace rdmaqos::testbed
