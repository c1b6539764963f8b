// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The compiled policy survives model rebuilds that change nothing it was compiled from, and is
// compiled again when the policy file, the partitions file or the fabric's nodes change.
#include <gtest/gtest.h>

#include <fstream>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/opensm-plugin/policy_cache.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

std::string policy_with_sl(int sl) {
  return "qos-levels\nqos-level\nname: DEFAULT\nsl: " + std::to_string(sl) +
         "\nend-qos-level\nend-qos-levels\n";
}

class PolicyCacheTest : public ::testing::Test {
 protected:
  // One file per test: ctest runs the tests of this fixture in parallel processes.
  std::string policy_path = ::testing::TempDir() + "/policy-cache-test-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                            ".conf";
  bool extra_node = false;  // the next snapshot has one more CA

  void write_policy(const std::string& text) { std::ofstream(policy_path) << text; }
  void TearDown() override { std::remove(policy_path.c_str()); }

  std::unique_ptr<Engine> engine() {
    Options o;
    o.policy = policy_path;
    return std::make_unique<Engine>(
        o, OsmConfig{}, [](bool, const std::string&) {},
        [this](FabricBuilder& b) {
          testing::feed_tiny_subnet(b);
          if (extra_node) {
            int c = b.node(0xC0, 1, "host C", 1);
            b.port(c, 1, testing::port_info(0xC1, 4, 1));
          }
          return true;
        });
  }
  static uint64_t compiles(const Engine& e) { return e.stats()["policy"]["compiles"]; }
  static uint64_t skipped(const Engine& e) { return e.stats()["policy"]["compiles_skipped"]; }
};

TEST_F(PolicyCacheTest, ARebuildWithAnUnchangedPolicyFileDoesNotCompileAgain) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  ASSERT_TRUE(e->rebuild());
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(compiles(*e), 1u);
  EXPECT_EQ(skipped(*e), 2u);
  EXPECT_EQ(e->stats()["fabric"]["models"], 3);
}

TEST_F(PolicyCacheTest, AChangedPolicyFileIsCompiledAtTheNextRebuild) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  write_policy(policy_with_sl(6));
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(compiles(*e), 2u);
  EXPECT_EQ(skipped(*e), 0u);
}

TEST_F(PolicyCacheTest, ANodeArrivingCompilesAgain) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  extra_node = true;
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(compiles(*e), 2u);
}

TEST_F(PolicyCacheTest, AReloadCompilesAndItsResultIsKeptForTheNextRebuild) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  write_policy(policy_with_sl(5));
  ASSERT_TRUE(e->reload()["ok"].get<bool>());
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(compiles(*e), 2u);
  EXPECT_EQ(skipped(*e), 1u);
}

TEST(SamePolicyFabric, OnlyNodesAndTheSmPortCount) {
  policy::Fabric a;
  a.sm_port_guid = 1;
  a.nodes.push_back({0x10, policy::NodeType::kCa, "host A", 1, {{1, 0x11}}});
  policy::Fabric b = a;
  b.partitions.push_back({});  // partitions come from the partitions text, compared on its own
  EXPECT_TRUE(same_policy_fabric(a, b));
  b.nodes[0].description = "host A2";
  EXPECT_FALSE(same_policy_fabric(a, b));
  b = a;
  b.nodes[0].port_guids[0].second = 0x12;
  EXPECT_FALSE(same_policy_fabric(a, b));
  b = a;
  b.sm_port_guid = 2;
  EXPECT_FALSE(same_policy_fabric(a, b));
}

}  // namespace
}  // namespace rdmaqos::osmp
