// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The first real-peer tests: OpenSM's QoS answers on the simulated fabric, as saquery sees
// them. They pin down the reference behaviour our own SA must reproduce.
#include <gtest/gtest.h>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::testbed {
namespace {

// iSER gets its own level; SDP through the simplified syntax.
const std::string kPolicy = sample_policy({.gold = false});

class OpenSmQos : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { fabric_ = start_fat_tree(kPolicy); }
  static void TearDownTestSuite() { fabric_.reset(); }

  // saquery -p from node001 (40 Gb/s) to node002 (20 Gb/s) with extra arguments.
  static PathAnswer query(std::vector<std::string> extra) {
    std::vector<std::string> argv = {"saquery", "-p",
                                     "--slid",  fabric_->lid_arg("node001"),
                                     "--dlid",  fabric_->lid_arg("node002")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = fabric_->run_at("node001", argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto records = parse_saquery_output(r.output);
    EXPECT_FALSE(records.empty()) << r.output;
    if (records.empty()) return {};
    auto answer = path_answer(records[0]);
    EXPECT_TRUE(answer) << r.output;
    return answer.value_or(PathAnswer{});
  }

  static inline std::unique_ptr<IbFabric> fabric_;
};

TEST_F(OpenSmQos, IserServiceIdGetsItsLevel) {
  PathAnswer a = query({"--service_id", "0x1060CBC"});
  EXPECT_EQ(a.sl, 3);
  EXPECT_EQ(a.rate, 5);  // 20 Gb/s path capped at 5 Gb/s
  EXPECT_EQ(a.packet_life, 8);
}

TEST_F(OpenSmQos, SdpServiceIdGetsTheUlpSl) {
  PathAnswer a = query({"--service_id", "0x11234"});
  EXPECT_EQ(a.sl, 1);
  EXPECT_EQ(a.rate, 6);  // not capped: the path's own 20 Gb/s
}

TEST_F(OpenSmQos, NoServiceIdFallsToDefault) {
  PathAnswer a = query({});
  EXPECT_EQ(a.sl, 0);
  EXPECT_EQ(a.rate, 6);
  EXPECT_EQ(a.mtu, 4);  // ibsim's fixed 2048 MTU capability
  EXPECT_EQ(a.qos_class, 0);
}

TEST_F(OpenSmQos, PathRateIsTheSlowestLink) {
  const auto& topo = fabric_->topology();
  RunResult r = fabric_->run_at("node001", {"saquery", "-p", "--slid", fabric_->lid_arg("node001"),
                                            "--dlid", fabric_->lid_arg("node003")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = path_answer(parse_saquery_output(r.output).at(0));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rate, link_rate_code(topo.node("node003").link));  // 1x SDR: 2.5 Gb/s
}

uint64_t capability_mask2(bool qos) {
  IbFabricOptions o = fabric_options(make_fat_tree({}));
  o.qos = qos;
  IbFabric fabric(o);
  RunResult r = fabric.run_at("node002", {"saquery", "-c"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto records = parse_saquery_output(r.output);
  if (records.empty()) return ~0ULL;
  return records[0].number("Capability mask 2").value_or(~0ULL);
}

TEST(OpenSmCapability, QosBitSetWithDashQ) {
  uint64_t mask2 = capability_mask2(true);
  EXPECT_TRUE(mask2 & 0x2) << std::hex << mask2;
}

TEST(OpenSmCapability, QosBitClearWithoutDashQ) {
  uint64_t mask2 = capability_mask2(false);
  EXPECT_FALSE(mask2 & 0x2) << std::hex << mask2;
}

}  // namespace
}  // namespace rdmaqos::testbed
