// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Plain-verbs QPs on InfiniBand against the real OpenSM on ibsim: the module asks the SA for the
// path with the program's QoS-Class (or Service-ID), and the SL and MTU the SA's policy chose
// are what it passes to the provider at RTR; the SA's rate is the address vector's static rate,
// never a packet-pacing limit. No InfiniBand device exists here: the program's QPs belong to a
// stand-in device and the provider behind the module is a stand-in that prints what
// ibv_modify_qp and ibv_modify_qp_rate_limit got (ib_stub/plain_verbs_client.c,
// stub/fake_provider.c), so the modify_qp itself is simulated; the SA query and its answer are
// real.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace {

using nlohmann::json;
using rdmaqos::testbed::IbFabric;

class PlainVerbsOpenSm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = rdmaqos::testbed::start_fat_tree(
        rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true}));
  }
  static void TearDownTestSuite() { fabric_.reset(); }

  struct Run {
    int exit_code = -1;
    std::string output;
    std::vector<std::string> provider;  // the stand-in provider's RTR lines
    std::vector<std::string> paced;     // its ibv_modify_qp_rate_limit lines
    std::vector<json> records;          // the test hook's ibv_modify_qp RTR lines
    std::vector<json> pacing_records;   // its ibv_modify_qp_rate_limit lines
  };

  // The client at node001 under umad2sim, the module and the stand-in provider, connecting
  // `count` QPs to node002.
  static Run client(const std::vector<std::string>& env, int count = 1) {
    std::string dir = ::testing::TempDir();
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string record = dir + "/plain-verbs-" + test + ".record";
    std::string config = dir + "/plain-verbs-empty-" + test + ".conf";
    std::remove(record.c_str());
    std::ofstream(config).flush();
    std::vector<std::string> argv = {
        "env",
        "LD_PRELOAD=" + rdmaqos::testbed::umad2sim_library() +
            ":" RDMA_QOS_PRELOAD_MODULE ":" RDMA_QOS_FAKE_PROVIDER,
        "FAKE_PORT_LID=" + fabric_->lid_arg("node001"), "RDMA_QOS_CONFIG=" + config,
        "RDMA_QOS_TEST_RECORD=" + record,
        // Generous on a loaded machine: the first query also reads ClassPortInfo.
        "RDMA_QOS_VERBS_SA_WAIT_MS=10000"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(),
                {RDMA_QOS_PLAIN_VERBS_CLIENT, fabric_->lid_arg("node002"), std::to_string(count)});
    auto r = fabric_->run_at("node001", argv, std::chrono::seconds(60));
    Run out{r.exit_code, r.output, {}, {}, {}, {}};
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("provider: ibv_modify_qp mask 0x", 0) == 0 &&
          line.find("path_mtu 0") == std::string::npos)  // INIT and RTS carry no path MTU
        out.provider.push_back(line);
      if (line.rfind("provider: ibv_modify_qp_rate_limit ", 0) == 0) out.paced.push_back(line);
    }
    std::ifstream in(record);
    for (std::string line; std::getline(in, line);) {
      auto j = json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.value("call", "") == "ibv_modify_qp" && j.value("dest_qp", 0) != 0)
        out.records.push_back(j);
      if (j.value("call", "") == "ibv_modify_qp_rate_limit") out.pacing_records.push_back(j);
    }
    return out;
  }

  static inline std::unique_ptr<IbFabric> fabric_;
};

TEST_F(PlainVerbsOpenSm, TheClassIsSentAndTheSasLevelIsApplied) {
  // QoS-Class 7 is GOLD's (SL 5, MTU 1024) only through the class: the query carried it.
  auto r = client({"RDMA_QOS_CLASS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 1u) << r.output;
  EXPECT_NE(r.provider[0].find(" sl 5 path_mtu 3"), std::string::npos) << r.provider[0];
  ASSERT_EQ(r.records.size(), 1u) << r.output;
  EXPECT_EQ(r.records[0]["source"], "plain_verbs");
  EXPECT_EQ(r.records[0]["sl"], 5);
  EXPECT_EQ(r.records[0]["path_mtu"], 3);
  EXPECT_EQ(r.records[0]["dlid"], fabric_->lid("node002"));
}

TEST_F(PlainVerbsOpenSm, TheServiceIdSelectsItsLevel) {
  auto r =
      client({"RDMA_QOS_SERVICE_ID=" + std::to_string(rdmaqos::testbed::kSampleIserServiceId)});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 1u) << r.output;
  EXPECT_NE(r.provider[0].find(" sl 3 "), std::string::npos) << r.provider[0];  // ISER
}

TEST_F(PlainVerbsOpenSm, ManyQpsToOnePeerAllGetTheLevel) {
  auto r = client({"RDMA_QOS_CLASS=7"}, 50);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 50u) << r.output;
  for (const auto& line : r.provider)
    EXPECT_NE(line.find(" sl 5 path_mtu 3"), std::string::npos) << line;
}

// The SA's PathRecord carries one rate, the path's, which OpenSM lowers to the level's
// rate-limit when the level has one: the host cannot tell which it got, so the rate goes into
// the address vector as the kernel puts a PathRecord's there, and no QP is paced. GOLD has no
// rate-limit: its path's rate is the fat tree's links', 20 Gb/s (code 6); ISER's rate-limit,
// code 5 (5 Gb/s), is below it.
TEST_F(PlainVerbsOpenSm, TheSasRateIsTheStaticRateAndNoQpIsPaced) {
  auto gold = client({"RDMA_QOS_CLASS=7"});
  ASSERT_EQ(gold.exit_code, 0) << gold.output;
  ASSERT_EQ(gold.records.size(), 1u) << gold.output;
  EXPECT_EQ(gold.records[0]["static_rate"], 6) << gold.records[0];
  EXPECT_TRUE(gold.paced.empty()) << gold.output;
  EXPECT_TRUE(gold.pacing_records.empty()) << json(gold.pacing_records);

  auto iser =
      client({"RDMA_QOS_SERVICE_ID=" + std::to_string(rdmaqos::testbed::kSampleIserServiceId)});
  ASSERT_EQ(iser.exit_code, 0) << iser.output;
  ASSERT_EQ(iser.records.size(), 1u) << iser.output;
  EXPECT_EQ(iser.records[0]["static_rate"], 5) << iser.records[0];
  EXPECT_TRUE(iser.paced.empty()) << iser.output;
  EXPECT_TRUE(iser.pacing_records.empty()) << json(iser.pacing_records);
}

TEST_F(PlainVerbsOpenSm, WithoutAClassTheQpIsStock) {
  auto r = client({});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 1u) << r.output;
  EXPECT_NE(r.provider[0].find(" sl 0 path_mtu 5"), std::string::npos) << r.provider[0];
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0]["source"], "none");
}

TEST_F(PlainVerbsOpenSm, AnSaThatDoesNotAnswerLeavesTheQpStockAndIsLoggedOnce) {
  // node003 is a plain CA: no SA listens there, so every query to it fails.
  auto r = client({"RDMA_QOS_CLASS=7", "RDMA_QOS_SA_LID=" + fabric_->lid_arg("node003")}, 3);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 3u) << r.output;
  for (const auto& line : r.provider)
    EXPECT_NE(line.find(" sl 0 path_mtu 5"), std::string::npos) << line;
  size_t warnings = 0;
  for (size_t at = r.output.find("plain-verbs QPs"); at != std::string::npos;
       at = r.output.find("plain-verbs QPs", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << r.output;
}

}  // namespace
