// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The port settings `rdma-qos run-env` warns about: the mlx5 traffic class override as the
// driver shows it in sysfs, and an SL outside a port's adaptive-routing SLs.
#include "port_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace rdmaqos::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::Optional;

TEST(TclassOverride, AGlobalValueIsTheOverride) {
  auto o = parse_tclass_override("Global tclass=106\n");
  ASSERT_TRUE(o);
  EXPECT_THAT(o->global, Optional(106));
  EXPECT_EQ(o->rules, 0);
}

TEST(TclassOverride, AnEmptyFileOverridesNothing) {
  EXPECT_FALSE(parse_tclass_override(""));
  EXPECT_FALSE(parse_tclass_override("\n"));
}

TEST(TclassOverride, DestinationRulesAreCountedBesideTheGlobalValue) {
  auto o = parse_tclass_override(
      "Global tclass=104\ndst_ip=10.0.0.0/8,tclass=96\nsrc_ip=10.0.0.1,dst_ip=10.1.0.0/16,"
      "tclass=32\n");
  ASSERT_TRUE(o);
  EXPECT_THAT(o->global, Optional(104));
  EXPECT_EQ(o->rules, 2);
  o = parse_tclass_override("dst_ip6=fe80::1,tclass=184\n");
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->global);
  EXPECT_EQ(o->rules, 1);
}

class TclassSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() /
        ("port_checks_test." + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "." + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& device, int port, const std::string& text) {
    const fs::path dir = root_ / device / "tc" / std::to_string(port);
    fs::create_directories(dir);
    std::ofstream(dir / "traffic_class") << text;
  }
  fs::path root_;
};

TEST_F(TclassSysfs, OnlyPortsThatOverrideAreListedInDeviceAndPortOrder) {
  write("mlx5_1", 10, "Global tclass=32\n");
  write("mlx5_1", 2, "Global tclass=184\n");
  write("mlx5_0", 1, "");
  fs::create_directories(root_ / "rxe0" / "ports" / "1");  // no tc directory: not mlx5
  auto o = read_tclass_overrides(root_);
  ASSERT_EQ(o.size(), 2U);
  EXPECT_EQ(o[0].device, "mlx5_1");
  EXPECT_EQ(o[0].port, 2);
  EXPECT_THAT(o[0].global, Optional(184));
  EXPECT_EQ(o[1].port, 10);
}

TEST_F(TclassSysfs, NoSysfsDirectoryIsNoOverride) {
  EXPECT_TRUE(read_tclass_overrides(root_ / "absent").empty());
}

TEST(TclassOverrideWarning, NamesThePortsTheValuesAndHowToRemoveTheGlobalOne) {
  EXPECT_FALSE(tclass_override_warning({}, "/sys/class/infiniband", 104));
  std::vector<TclassOverride> o = {{"mlx5_0", 1, 106, 0}, {"mlx5_1", 1, std::nullopt, 2}};
  EXPECT_THAT(
      tclass_override_warning(o, "/sys/class/infiniband", 104),
      Optional(std::string(
          "the mlx5 traffic class override is set on mlx5_0 port 1 (Global tclass=106), mlx5_1 "
          "port 1 (2 destination rules): the kernel gives every verbs QP with a GRH on those "
          "ports that traffic class (a destination rule: the QPs to its destinations), over what "
          "UCX_IB_TRAFFIC_CLASS, NCCL_IB_TC and the other stack variables say (this class: 104); "
          "only QPs made through DEVX (UCX's mlx5 transports, NCCL's GIN GDAKI, NVSHMEM's IBGDA "
          "and IBDEVX) keep the variables' value; writing -1 to "
          "/sys/class/infiniband/mlx5_0/tc/1/traffic_class removes the port's global value")));
}

TEST(TclassOverrideWarning, WithoutAClassTrafficClassItSaysNoValue) {
  auto w = tclass_override_warning({{"mlx5_2", 1, std::nullopt, 1}}, "/s", std::nullopt);
  ASSERT_TRUE(w);
  EXPECT_THAT(*w, ::testing::HasSubstr("on that port that traffic class"));
  EXPECT_THAT(*w, ::testing::HasSubstr("the other stack variables say; only QPs"));
  EXPECT_THAT(*w, ::testing::Not(::testing::HasSubstr("writing -1")));
}

TEST(ArSlWarning, AnSlWithAdaptiveRoutingNeedsNoWarning) {
  EXPECT_FALSE(ar_sl_warning(1, {{"mlx5_0", 1, 0b0110}}, std::nullopt));
}

TEST(ArSlWarning, APortWithoutAdaptiveRoutingLosesNothing) {
  EXPECT_FALSE(ar_sl_warning(3, {{"mlx5_0", 1, 0}}, std::nullopt));
}

TEST(ArSlWarning, AnSlOutsideTheMaskNamesThePortsAndTheirAdaptiveRoutingSls) {
  std::vector<ArSlMask> ports = {
      {"mlx5_0", 1, 0b0011}, {"mlx5_1", 1, 0b1000}, {"mlx5_2", 1, 0x8001}};
  EXPECT_THAT(ar_sl_warning(3, ports, std::nullopt),
              Optional(std::string(
                  "SL 3 has no adaptive routing on mlx5_0 port 1 (adaptive routing on SLs 0,1), "
                  "mlx5_2 port 1 (adaptive routing on SLs 0,15): this class's traffic there is "
                  "routed statically; give its level an SL with adaptive routing, or enable "
                  "adaptive routing on SL 3 in the subnet manager")));
}

TEST(ArSlWarning, SaysUcxRefusesTheSlWhenUcxIbArEnableIsYes) {
  std::vector<ArSlMask> ports = {{"mlx5_0", 1, 0b0001}};
  auto w = ar_sl_warning(2, ports, "y");
  ASSERT_TRUE(w);
  EXPECT_THAT(*w, ::testing::StartsWith("SL 2 has no adaptive routing on mlx5_0 port 1 "
                                        "(adaptive routing on SL 0): "));
  EXPECT_THAT(*w, ::testing::EndsWith("; UCX refuses SL 2 there under UCX_IB_AR_ENABLE=y"));
  w = ar_sl_warning(2, ports, "try");
  ASSERT_TRUE(w);
  EXPECT_THAT(*w, ::testing::EndsWith("in the subnet manager"));
}

}  // namespace
}  // namespace rdmaqos::cli
