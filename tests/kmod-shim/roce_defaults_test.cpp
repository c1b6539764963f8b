// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Kernel RoCE defaults on a fake sysfs and configfs tree: which ports are RoCE, what apply
// writes, idempotence, and errors that name the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rdma-qos/kmod-shim/roce_defaults.h"
#include "rdma-qos/testbed/result_matchers.h"

namespace rdmaqos::kmod {
namespace {

using rdmaqos::testing::FailedWith;
using rdmaqos::testing::Succeeded;

namespace fs = std::filesystem;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string get(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// What an ApplyResult's error says, "" when it has none (for the failure messages).
std::string error_text(const ApplyResult& r) {
  return r.error ? r.error->message : "";
}

class RoceDefaults : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdmaqos-kmod-XXXXXX";
    root_ = mkdtemp(tmpl);
    paths_.sysfs_infiniband = root_ / "sys";
    paths_.configfs_rdma_cm = root_ / "configfs";
    put(root_ / "sys/rxe0/ports/1/link_layer", "Ethernet\n");
    put(root_ / "sys/rxe1/ports/1/link_layer", "Ethernet\n");
    put(root_ / "sys/mlx4_0/ports/1/link_layer", "InfiniBand\n");
    // rxe0 already has its configfs directory (as after a first mkdir by the kernel).
    put(root_ / "configfs/rxe0/ports/1/default_roce_tos", "0\n");
    put(root_ / "configfs/rxe0/ports/1/default_roce_mode", "RoCE v2\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  DesiredDefaults tos(const char* spec, const char* mode = "") {
    DesiredDefaults d;
    d.tos = *config::parse_port_values(spec, 255);
    d.mode = mode;
    return d;
  }

  fs::path root_;
  KernelPaths paths_;
};

TEST_F(RoceDefaults, ListsOnlyEthernetPorts) {
  auto ports = list_roce_ports(paths_);
  ASSERT_THAT(ports, Succeeded());
  ASSERT_EQ(ports->size(), 2u);
  EXPECT_EQ((*ports)[0].device, "rxe0");
  EXPECT_EQ((*ports)[1].device, "rxe1");
}

TEST_F(RoceDefaults, NoDevicesIsAnEmptyList) {
  paths_.sysfs_infiniband = root_ / "nothing";
  auto ports = list_roce_ports(paths_);
  ASSERT_THAT(ports, Succeeded());
  EXPECT_TRUE(ports->empty());
}

TEST_F(RoceDefaults, ApplyWritesTheMostSpecificTos) {
  auto results = apply_roce_defaults(paths_, tos("32, rxe0:1=104"), "rxe0", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].changed) << error_text(results[0]);
  EXPECT_EQ(results[0].before, "0");
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_tos"), "104");
}

TEST_F(RoceDefaults, SecondApplyChangesNothing) {
  apply_roce_defaults(paths_, tos("104", "v2"), "rxe0", std::nullopt, false);
  auto again = apply_roce_defaults(paths_, tos("104", "v2"), "rxe0", std::nullopt, false);
  ASSERT_EQ(again.size(), 2u);
  for (const auto& r : again) EXPECT_FALSE(r.changed) << r.file;
}

TEST_F(RoceDefaults, ModeIsWrittenAsTheKernelSpellsIt) {
  apply_roce_defaults(paths_, tos("", "v1"), "rxe0", 1, false);
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_mode"), "IB/RoCE v1");
}

TEST_F(RoceDefaults, DryRunWritesNothing) {
  auto results = apply_roce_defaults(paths_, tos("104"), "rxe0", std::nullopt, true);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].changed);
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_tos"), "0");
}

TEST_F(RoceDefaults, WriteFailureNamesTheFile) {
  // rxe1's directory is created, but in this fake tree no kernel populates its ports.
  auto results = apply_roce_defaults(paths_, tos("104"), "rxe1", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].changed);
  EXPECT_EQ(error_text(results[0]), (root_ / "configfs/rxe1/ports/1/default_roce_tos").string() +
                                        ": No such file or directory");
}

TEST_F(RoceDefaults, MissingConfigfsSaysWhatToDo) {
  paths_.configfs_rdma_cm = root_ / "no-configfs";
  auto results = apply_roce_defaults(paths_, tos("104"), "rxe0", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NE(error_text(results[0]).find("is configfs mounted and the rdma_cm module loaded?"),
            std::string::npos)
      << error_text(results[0]);
}

TEST_F(RoceDefaults, UnknownDeviceIsAnError) {
  auto results = apply_roce_defaults(paths_, tos("104"), "mlx5_9", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NE(error_text(results[0]).find("no RoCE port mlx5_9"), std::string::npos)
      << error_text(results[0]);
}

TEST_F(RoceDefaults, PortsNotCoveredAreLeftAlone) {
  auto results = apply_roce_defaults(paths_, tos("rxe1=8"), "rxe0", std::nullopt, false);
  EXPECT_TRUE(results.empty());
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_tos"), "0");
}

TEST_F(RoceDefaults, QosLevelSlMapsThroughSl2tclass) {
  DesiredDefaults d;
  d.sl = *config::parse_port_values("rxe0=3", 15);
  d.sl2tclass[3] = 106;  // DSCP 26 << 2 | ECN 2
  auto results = apply_roce_defaults(paths_, d, "rxe0", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].changed) << error_text(results[0]);
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_tos"), "106");
}

TEST_F(RoceDefaults, ExplicitTosWinsOverTheLevel) {
  DesiredDefaults d = tos("rxe0=32");
  d.sl = *config::parse_port_values("3", 15);
  d.sl2tclass[3] = 106;
  auto rxe0 = desired_tos(d, "rxe0", 1);
  ASSERT_THAT(rxe0, Succeeded());
  EXPECT_EQ(*rxe0, 32u);
  auto rxe1 = desired_tos(d, "rxe1", 1);
  ASSERT_THAT(rxe1, Succeeded());
  EXPECT_EQ(*rxe1, 106u);
}

TEST_F(RoceDefaults, LevelWithoutTrafficClassIsAnErrorAndWritesNothing) {
  DesiredDefaults d;
  d.sl = *config::parse_port_values("5", 15);
  d.sl2tclass[3] = 106;
  auto results = apply_roce_defaults(paths_, d, "rxe0", std::nullopt, false);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NE(error_text(results[0]).find("SL 5 of rxe0:1 has no traffic class in roce_sl2tclass"),
            std::string::npos)
      << error_text(results[0]);
  EXPECT_EQ(get(root_ / "configfs/rxe0/ports/1/default_roce_tos"), "0");
}

TEST_F(RoceDefaults, DesiredTosOfALevelWithoutTrafficClassIsAnInvalidArgument) {
  DesiredDefaults d;
  d.sl = *config::parse_port_values("5", 15);
  auto unmapped = desired_tos(d, "rxe0", 1);
  ASSERT_THAT(unmapped, FailedWith(ErrorCode::kInvalidArgument));
  EXPECT_EQ(unmapped.error().message,
            "kernel_roce_sl: SL 5 of rxe0:1 has no traffic class in roce_sl2tclass (list one for "
            "SL 0..5, or set kernel_roce_tos for this port)");
}

TEST_F(RoceDefaults, DesiredTosOfAPortNothingCoversIsNone) {
  auto none = desired_tos(tos("rxe1=8"), "rxe0", 1);
  ASSERT_THAT(none, Succeeded());
  EXPECT_EQ(*none, std::nullopt);
}

TEST_F(RoceDefaults, ReadShowsWhatIsSet) {
  auto d = read_port_defaults(paths_, {"rxe0", 1});
  EXPECT_EQ(d.tos, 0);
  EXPECT_EQ(d.mode, "RoCE v2");
  EXPECT_FALSE(read_port_defaults(paths_, {"rxe1", 1}).tos);
}

}  // namespace
}  // namespace rdmaqos::kmod
