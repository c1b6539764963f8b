// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model: rate codes and their data-rate order, LID/GUID lookup and the LFT walk
// (MTU and rate minimum over the path, SLs mapped to VL 15 anywhere on it).
#include <gtest/gtest.h>

#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

using testing::kA;
using testing::kB;
using testing::kC;
using testing::kSwitch;
using testing::small_model;

TEST(RateOrder, RateFromWidthAndSpeed) {
  EXPECT_EQ(rate_from_link(2, 4, 0), 7);   // 4x QDR: 40G
  EXPECT_EQ(rate_from_link(8, 1, 0), 4);   // 12x SDR: 30G
  EXPECT_EQ(rate_from_link(2, 4, 2), 16);  // 4x EDR: 100G (extended speed wins)
  EXPECT_EQ(rate_from_link(1, 1, 0), 2);   // 1x SDR: 2.5G
  EXPECT_EQ(rate_from_link(16, 4, 0), 6);  // 2x QDR: 20G
  EXPECT_EQ(rate_from_link(3, 1, 0), std::nullopt);
}

// Every width at every lane speed: IBA rate codes (enum ibv_rate) of lanes x lane speed.
TEST(RateOrder, EveryWidthAtEverySpeed) {
  constexpr uint8_t k1x = 1, k2x = 16, k4x = 2, k8x = 4, k12x = 8;
  struct Case {
    uint8_t width, speed, ext, rate;
  };
  const Case cases[] = {
      {k1x, 1, 0, 2},  {k2x, 1, 0, 5},  {k4x, 1, 0, 3},  {k8x, 1, 0, 6},  {k12x, 1, 0, 4},
      {k1x, 2, 0, 5},  {k2x, 2, 0, 3},  {k4x, 2, 0, 6},  {k8x, 2, 0, 7},  {k12x, 2, 0, 8},
      {k1x, 4, 0, 3},  {k2x, 4, 0, 6},  {k4x, 4, 0, 7},  {k8x, 4, 0, 9},  {k12x, 4, 0, 10},
      {k1x, 4, 1, 11}, {k2x, 4, 1, 19}, {k4x, 4, 1, 12}, {k8x, 4, 1, 13}, {k12x, 4, 1, 14},
      {k1x, 4, 2, 15}, {k2x, 4, 2, 20}, {k4x, 4, 2, 16}, {k8x, 4, 2, 17}, {k12x, 4, 2, 18},
      {k1x, 4, 4, 20}, {k2x, 4, 4, 16}, {k4x, 4, 4, 17}, {k8x, 4, 4, 21}, {k12x, 4, 4, 22},
      {k1x, 4, 8, 16}, {k2x, 4, 8, 17}, {k4x, 4, 8, 21}, {k8x, 4, 8, 23}, {k12x, 4, 8, 24},
  };
  for (const Case& c : cases) {
    PortRate r = port_rate(c.width, c.speed, c.ext, true);
    EXPECT_EQ(r.rate, c.rate) << int(c.width) << " " << int(c.speed) << " " << int(c.ext);
    EXPECT_TRUE(r.known);
  }
}

TEST(RateOrder, ExtendedSpeedCountsOnlyWhenTheCapabilityMaskSaysSo) {
  EXPECT_EQ(port_rate(2, 4, 2, false).rate, 7);  // 4x EDR link of a port without the bit: 40G
  EXPECT_TRUE(port_rate(2, 4, 2, false).known);
  EXPECT_EQ(port_rate(2, 4, 0, true).rate, 7);  // extended, none active: LinkSpeedActive
  EXPECT_TRUE(port_rate(2, 4, 0, true).known);
}

TEST(RateOrder, UnknownCombinationsAreFlaggedWithOpenSmsFallback) {
  PortRate width = port_rate(3, 4, 0, true);  // width 3 is no width: counted as 1x
  EXPECT_FALSE(width.known);
  EXPECT_EQ(width.rate, 3);
  PortRate ext = port_rate(2, 2, 3, true);  // extended speed 3 is none: LinkSpeedActive (4x DDR)
  EXPECT_FALSE(ext.known);
  EXPECT_EQ(ext.rate, 6);
  PortRate speed = port_rate(2, 0, 0, false);  // no speed at all: 2.5G
  EXPECT_FALSE(speed.known);
  EXPECT_EQ(speed.rate, 2);
}

TEST(RateOrder, AnnouncedRateNeedsTheEndPortsSupport) {
  const uint32_t ext_cm2 = kCapHasExtendedSpeeds | kCapHasCapabilityMask2;
  // No CapabilityMask2 (ibsim's ports): the 2x-only and HDR-only rates are lowered.
  EXPECT_EQ(announced_rate(19, kCapHasExtendedSpeeds, 0), 15);  // 28G -> 25G
  EXPECT_EQ(announced_rate(19, 0, 0), 6);                       // 28G -> 20G
  EXPECT_EQ(announced_rate(20, kCapHasExtendedSpeeds, 0), 7);   // 50G -> 40G
  EXPECT_EQ(announced_rate(21, kCapHasExtendedSpeeds, 0), 18);  // 400G -> 300G
  EXPECT_EQ(announced_rate(22, kCapHasExtendedSpeeds, 0), 18);  // 600G -> 300G
  EXPECT_EQ(announced_rate(23, kCapHasExtendedSpeeds, 0), 22);  // 800G -> 600G
  EXPECT_EQ(announced_rate(24, ext_cm2, kCap2SpeedHdr), 22);    // 1200G, HDR only: 600G
  EXPECT_EQ(announced_rate(24, ext_cm2, 0), 18);                // 1200G, neither: 300G
  // Announced support keeps them.
  EXPECT_EQ(announced_rate(19, ext_cm2, kCap2Width2x), 19);
  EXPECT_EQ(announced_rate(20, ext_cm2, kCap2SpeedHdr), 20);
  EXPECT_EQ(announced_rate(21, ext_cm2, kCap2SpeedNdr), 21);
  EXPECT_EQ(announced_rate(23, ext_cm2, kCap2SpeedNdr), 23);
  // Every other rate stands.
  EXPECT_EQ(announced_rate(16, 0, 0), 16);
  EXPECT_EQ(announced_rate(12, 0, 0), 12);
}

TEST(RateOrder, OrderIsByDataRateNotCode) {
  EXPECT_LT(compare_rates(4, 15), 0);   // 30G (12x SDR) below 25G
  EXPECT_LT(compare_rates(10, 16), 0);  // 120G (12x QDR) below 100G
  EXPECT_GT(compare_rates(7, 19), 0);   // 40G above 28G
  EXPECT_EQ(compare_rates(3, 3), 0);
  EXPECT_GT(compare_rates(23, 22), 0);  // 800G above 600G
  EXPECT_GT(compare_rates(24, 23), 0);
}

TEST(RateOrder, SlowerRateFollowsTheOrder) {
  EXPECT_EQ(slower_rate(16), 10);  // below 100G: 120G
  EXPECT_EQ(slower_rate(15), 4);   // below 25G: 30G
  EXPECT_EQ(slower_rate(7), 19);   // below 40G: 28G
  EXPECT_EQ(slower_rate(2), std::nullopt);
}

TEST(FabricModel, LidsAndGuidsFindTheirEndpoints) {
  FabricModel f = small_model();
  EXPECT_EQ(f.by_lid(1), kSwitch);
  EXPECT_EQ(f.by_lid(3), kB);
  EXPECT_EQ(f.by_lid(9), std::nullopt);
  EXPECT_EQ(f.by_guid(0x31), kC);
  EXPECT_EQ(f.by_guid(0x100), kSwitch);
  EXPECT_EQ(f.by_guid(0x30), std::nullopt);  // a CA's node GUID is not a port
}

TEST(FabricModel, LmcCoversALidRange) {
  FabricModel f = small_model();
  f.nodes[3].ports[1].lid = 8;
  f.nodes[3].ports[1].lmc = 2;
  f.index();
  EXPECT_EQ(f.by_lid(8), kC);
  EXPECT_EQ(f.by_lid(11), kC);
  EXPECT_EQ(f.by_lid(12), std::nullopt);
}

TEST(FabricModel, WalkTakesTheMinimumOverThePath) {
  FabricModel f = small_model();
  auto ac = f.walk(kA, 4);
  ASSERT_TRUE(ac);
  EXPECT_EQ(ac->mtu, 4);
  EXPECT_EQ(ac->rate, 7);
  EXPECT_EQ(ac->hops, 1);
  EXPECT_EQ(ac->valid_sls, 0xFFFF);
  auto ab = f.walk(kA, 3);
  ASSERT_TRUE(ab);
  EXPECT_EQ(ab->rate, 3);
}

TEST(FabricModel, PathToASwitchEndsAtPortZero) {
  FabricModel f = small_model();
  auto w = f.walk(kA, 1);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->mtu, 3);
  EXPECT_EQ(w->rate, 3);
  auto from_switch = f.walk(kSwitch, 4);
  ASSERT_TRUE(from_switch);
  EXPECT_EQ(from_switch->mtu, 3);
}

TEST(FabricModel, SlMappedToVl15AnywhereIsInvalid) {
  FabricModel f = small_model();
  f.nodes[0].ports[3].sl2vl[1][14] = 15;  // switch, from port 1 out of port 3
  auto ac = f.walk(kA, 4);
  ASSERT_TRUE(ac);
  EXPECT_EQ(ac->valid_sls, 0xFFFF & ~(1u << 14));
  auto ca = f.walk(kC, 2);
  ASSERT_TRUE(ca);
  EXPECT_EQ(ca->valid_sls, 0xFFFF);  // the other direction uses another table
}

// A loopback still leaves through the CA's port: its SL2VL table applies (OpenSM 3.3.23 answers
// no record for a level SL that table sends to VL 15, seen with qos_ca_sl2vl on ibsim).
TEST(FabricModel, CaLoopbackAppliesItsOwnSl2Vl) {
  FabricModel f = small_model();
  f.nodes[1].ports[1].sl2vl[0][4] = 15;  // CA a
  auto loop = f.walk(kA, 2);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->links, 0);
  EXPECT_EQ(loop->valid_sls, 0xFFFF & ~(1u << 4));
}

TEST(FabricModel, MissingLftEntryMeansNoPath) {
  FabricModel f = small_model();
  f.nodes[0].lft[4] = 0xFF;
  EXPECT_EQ(f.walk(kA, 4), std::nullopt);
  EXPECT_EQ(f.walk(kA, 77), std::nullopt);
}

TEST(FabricModel, PolicyFabricListsEndpointGuids) {
  policy::Fabric pf = small_model().policy_fabric();
  ASSERT_EQ(pf.nodes.size(), 4u);
  EXPECT_EQ(pf.nodes[0].port_guids, (std::vector<std::pair<int, uint64_t>>{{0, 0x100}}));
  EXPECT_EQ(pf.nodes[2].port_guids, (std::vector<std::pair<int, uint64_t>>{{1, 0x21}}));
  EXPECT_EQ(pf.sm_port_guid, 0x11u);
}

}  // namespace
}  // namespace rdmaqos::sad
