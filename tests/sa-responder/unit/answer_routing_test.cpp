// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The routing engine's SLs in the answer engine (AnswerContext::routing): where the subnet
// manager's routing engine assigns each path an SL (LASH, DFSSSP, Nue, torus-2QoS), OpenSM lets
// it replace the SL chosen from the request, the level and the partition, and a request naming
// another SL gets no record.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "rdma-qos/sa-responder/answer.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using testing::kA;
using testing::kC;

// SL = hint + 1 for every path, except those listed; remembers every question.
class FakeRouting : public RoutingSl {
 public:
  std::map<std::pair<uint16_t, uint16_t>, uint8_t> fixed;
  mutable std::vector<std::tuple<uint8_t, uint16_t, uint16_t>> asked;

  uint8_t path_sl(uint8_t hint, uint16_t slid, uint16_t dlid) const override {
    asked.emplace_back(hint, slid, dlid);
    auto it = fixed.find({slid, dlid});
    return it != fixed.end() ? it->second : static_cast<uint8_t>(hint + 1);
  }
};

class AnswerRoutingTest : public ::testing::Test {
 protected:
  FabricModel fabric = testing::small_model();
  policy::Fabric pfabric = fabric.policy_fabric();
  std::shared_ptr<const policy::CompiledPolicy> policy;
  std::vector<policy::Partition> partitions;
  FakeRouting routing;

  void load_default_sl(int sl) {
    auto r = policy::load_policy("qos-levels\nqos-level\nname: DEFAULT\nsl: " + std::to_string(sl) +
                                     "\nend-qos-level\nend-qos-levels\n",
                                 &pfabric);
    ASSERT_TRUE(r.policy);
    policy = r.policy;
  }

  PairAnswer a_to_c(const RoutingSl* r, std::optional<uint8_t> requested_sl = std::nullopt) {
    AnswerContext ctx;
    ctx.fabric = &fabric;
    ctx.policy = policy.get();
    ctx.partitions = &partitions;
    ctx.routing = r;
    PathRequest req;
    if (requested_sl) {
      req.record.sl = *requested_sl;
      req.comp_mask |= pr::kSl;
    }
    return answer_pair(ctx, req, kA, kC);
  }
};

TEST_F(AnswerRoutingTest, WithoutARoutingEngineTheLevelsSlStands) {
  load_default_sl(5);
  auto a = a_to_c(nullptr);
  ASSERT_TRUE(a.record);
  EXPECT_EQ(a.record->sl, 5);
}

TEST_F(AnswerRoutingTest, TheEnginesSlReplacesTheLevelsAndIsToldItAsTheHint) {
  load_default_sl(5);
  routing.fixed[{2, 4}] = 2;
  auto a = a_to_c(&routing);
  ASSERT_TRUE(a.record);
  EXPECT_EQ(a.record->sl, 2);
  ASSERT_FALSE(routing.asked.empty());
  EXPECT_EQ(routing.asked.front(), std::make_tuple(uint8_t{5}, uint16_t{2}, uint16_t{4}));
}

TEST_F(AnswerRoutingTest, TheReverseDirectionIsAskedWithItsOwnLids) {
  load_default_sl(0);
  auto a = a_to_c(&routing);
  ASSERT_TRUE(a.record);
  bool reverse_asked = false;
  for (const auto& [hint, slid, dlid] : routing.asked) reverse_asked |= slid == 4 && dlid == 2;
  EXPECT_TRUE(reverse_asked);
}

TEST_F(AnswerRoutingTest, APartitionSlIsTheHintWithoutAPolicy) {
  // Every P_Key a and c share carries SL 3, whichever the answer picks.
  for (uint16_t pkey : {0x7FFF, 0x0010, 0x0040}) {
    policy::Partition p;
    p.pkey = pkey;
    p.sl = 3;
    partitions.push_back(p);
  }
  auto a = a_to_c(&routing);
  ASSERT_TRUE(a.record);
  EXPECT_EQ(a.record->sl, 4);  // hint 3, plus one
}

TEST_F(AnswerRoutingTest, ARequestedSlMustBeTheEnginesSl) {
  routing.fixed[{2, 4}] = 6;
  routing.fixed[{4, 2}] = 6;
  auto other = a_to_c(&routing, 1);
  EXPECT_FALSE(other.record);
  EXPECT_EQ(other.rejection, Rejection::kSlNotRouting);
  auto same = a_to_c(&routing, 6);
  ASSERT_TRUE(same.record);
  EXPECT_EQ(same.record->sl, 6);
}

}  // namespace
}  // namespace rdmaqos::sad
