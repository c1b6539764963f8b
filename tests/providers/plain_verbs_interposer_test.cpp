// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Plain-verbs QPs in the interposer core, with a fake provider and a stand-in decision hook:
// the level reaches the provider at RTR (InfiniBand too), the program's own values are kept or
// replaced as configured, the MTU is only ever lowered, and the test hook names the source.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "fake_verbs_host.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/providers/verbs_interposer.h"

namespace rdmaqos::providers {
namespace {

std::vector<ibv_qp_attr>& passed() {
  static std::vector<ibv_qp_attr> p;
  return p;
}

int fake_modify(ibv_qp*, ibv_qp_attr* attr, int) {
  passed().push_back(*attr);
  return 0;
}

constexpr int kRtrMask =
    IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN;

class PlainVerbsInterposer : public ::testing::Test {
 protected:
  void SetUp() override {
    passed().clear();
    qp_.qp_num = 0x123;
    hooks_.on_link_kind = [this](ibv_context*, uint8_t, uint8_t) { return link_; };
    hooks_.on_qp_port = [](ibv_qp*) -> uint8_t { return 1; };
    hooks_.on_record = [this](const std::string& line) { records_.push_back(line); };
    level_.sl = 5;
    level_.path_mtu = IBV_MTU_1024;
    level_.static_rate = IBV_RATE_40_GBPS;
    hooks_.on_plain_verbs = [this](const PlainVerbsTarget& t) -> std::optional<QosDecision> {
      targets_.push_back(t);
      return level_;
    };
  }
  void TearDown() override { QpRegistry::instance().erase(&qp_); }

  ibv_qp_attr rtr(ibv_mtu mtu = IBV_MTU_4096) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.dest_qp_num = 0xabcd;
    a.path_mtu = mtu;
    a.ah_attr.dlid = 3;
    a.ah_attr.port_num = 1;
    return a;
  }

  ibv_qp qp_{};
  FakeVerbsHost hooks_;
  LinkKind link_ = LinkKind::kInfiniBand;
  QosDecision level_;
  std::vector<PlainVerbsTarget> targets_;
  std::vector<std::string> records_;
};

TEST_F(PlainVerbsInterposer, InfiniBandRtrGetsTheLevelsSlMtuAndRate) {
  ibv_qp_attr a = rtr();
  ASSERT_EQ(interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_), 0);
  ASSERT_EQ(passed().size(), 1u);
  EXPECT_EQ(passed()[0].ah_attr.sl, 5);
  EXPECT_EQ(passed()[0].path_mtu, IBV_MTU_1024);
  EXPECT_EQ(passed()[0].ah_attr.static_rate, IBV_RATE_40_GBPS);
  EXPECT_EQ(a.ah_attr.sl, 0);  // the program's attributes are untouched
}

TEST_F(PlainVerbsInterposer, TheHookSeesThePortPkeyIndexAndDestination) {
  // What the QP answers (ibv_query_qp in the module): the port of its INIT transition, its
  // P_Key index.
  hooks_.on_qp_pkey_index = [](ibv_qp*) -> uint16_t { return 2; };
  ibv_qp_attr a = rtr();
  a.ah_attr.port_num = 0;  // as some programs leave it: the INIT transition's port
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  ASSERT_EQ(targets_.size(), 1u);
  EXPECT_EQ(targets_[0].port, 1);
  EXPECT_EQ(targets_[0].pkey_index, 2);
  EXPECT_EQ(targets_[0].link, LinkKind::kInfiniBand);
  EXPECT_EQ(targets_[0].ah->dlid, 3);
}

TEST_F(PlainVerbsInterposer, OnRoceTheQpIsNotAskedForItsPkeyIndex) {
  // The host policy matches RoCE QPs on the default P_Key: no query for the index.
  hooks_.on_link_kind = [](ibv_context*, uint8_t, uint8_t) { return LinkKind::kRoceV2; };
  int asked = 0;
  hooks_.on_qp_pkey_index = [&asked](ibv_qp*) -> uint16_t {
    ++asked;
    return 2;
  };
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  ASSERT_EQ(targets_.size(), 1u);
  EXPECT_EQ(targets_[0].pkey_index, 0);
  EXPECT_EQ(asked, 0);
}

TEST_F(PlainVerbsInterposer, TheMtuIsNeverRaisedAboveTheProgramsPathMtu) {
  ibv_qp_attr a = rtr(IBV_MTU_512);
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_EQ(passed().at(0).path_mtu, IBV_MTU_512);
}

TEST_F(PlainVerbsInterposer, KeepLeavesAnSlTheProgramSetItself) {
  ibv_qp_attr a = rtr();
  a.ah_attr.sl = 2;
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_EQ(passed().at(0).ah_attr.sl, 2);
  EXPECT_EQ(passed().at(0).path_mtu, IBV_MTU_1024);  // the cap applies under keep too
}

TEST_F(PlainVerbsInterposer, ReplaceOverridesAnSlTheProgramSetItself) {
  hooks_.values = ProgramValues::kReplace;
  ibv_qp_attr a = rtr();
  a.ah_attr.sl = 2;
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_EQ(passed().at(0).ah_attr.sl, 5);
}

TEST_F(PlainVerbsInterposer, OnRoceTheLevelsTrafficClassReachesTheGrh) {
  link_ = LinkKind::kRoceV2;
  level_.traffic_class = 104;
  ibv_qp_attr a = rtr();
  a.ah_attr.is_global = 1;
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_EQ(passed().at(0).ah_attr.grh.traffic_class, 104);
  EXPECT_EQ(passed().at(0).ah_attr.sl, 5);
}

TEST_F(PlainVerbsInterposer, WithoutALevelInfiniBandQpsAreUntouched) {
  hooks_.on_plain_verbs = [](const PlainVerbsTarget&) -> std::optional<QosDecision> {
    return std::nullopt;
  };
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_EQ(passed().at(0).ah_attr.sl, 0);
  EXPECT_EQ(passed().at(0).path_mtu, IBV_MTU_4096);
}

TEST_F(PlainVerbsInterposer, AnRdmaCmDecisionWinsAndTheHookIsNotAsked) {
  QosDecision cm;
  cm.sl = 1;
  QpRegistry::instance().set_decision(&qp_, cm);
  link_ = LinkKind::kRoceV2;
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_TRUE(targets_.empty());
  EXPECT_EQ(passed().at(0).ah_attr.sl, 1);
}

TEST_F(PlainVerbsInterposer, AnRdmaCmQpWithoutADecisionIsNotAPlainVerbsQp) {
  // On InfiniBand rdma_cm registers no decision: the SA's path is already in the AV.
  QpRegistry::instance().mark_rdma_cm(&qp_);
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  EXPECT_TRUE(targets_.empty());
  EXPECT_EQ(passed().at(0).ah_attr.sl, 0);
  EXPECT_EQ(passed().at(0).path_mtu, IBV_MTU_4096);
}

TEST_F(PlainVerbsInterposer, TheTestHookNamesThePlainVerbsSourceAndTheMtu) {
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kRtrMask, fake_modify, hooks_);
  ASSERT_EQ(records_.size(), 1u);
  auto r = nlohmann::json::parse(records_[0]);
  EXPECT_EQ(r["source"], "plain_verbs");
  EXPECT_EQ(r["sl"], 5);
  EXPECT_EQ(r["dlid"], 3);
  EXPECT_EQ(r["path_mtu"], 3);  // IBV_MTU_1024
  EXPECT_EQ(r["changed"], true);
}

TEST_F(PlainVerbsInterposer, AnAddressHandleGetsTheLevelToo) {
  ibv_context ctx{};
  ibv_pd pd{};
  pd.context = &ctx;
  ibv_ah_attr ah{};
  ah.dlid = 3;
  ah.port_num = 1;
  static ibv_ah fake{};
  static ibv_ah_attr seen;
  auto create = [](ibv_pd*, ibv_ah_attr* attr) -> ibv_ah* {
    seen = *attr;
    return &fake;
  };
  ASSERT_EQ(interpose_create_ah(&pd, &ah, create, hooks_), &fake);
  EXPECT_EQ(seen.sl, 5);
  EXPECT_EQ(seen.static_rate, IBV_RATE_40_GBPS);
}

TEST_F(PlainVerbsInterposer, AnAddressHandleOnAnRdmaCmUdPdIsLeftToRdmaCm) {
  // Static: the mark stays for the process, and no other test's PD may share the address.
  static ibv_context ctx{};
  static ibv_pd pd{};
  pd.context = &ctx;
  QpRegistry::instance().mark_rdma_cm_pd(&pd);
  ibv_ah_attr ah{};
  ah.dlid = 3;
  ah.port_num = 1;
  static ibv_ah fake{};
  static ibv_ah_attr seen;
  auto create = [](ibv_pd*, ibv_ah_attr* attr) -> ibv_ah* {
    seen = *attr;
    return &fake;
  };
  ASSERT_EQ(interpose_create_ah(&pd, &ah, create, hooks_), &fake);
  EXPECT_TRUE(targets_.empty());
  EXPECT_EQ(seen.sl, 0);
}

TEST(KeepProgramValues, ZeroIsUnsetAndGetsTheLevel) {
  QosDecision d;
  d.sl = 5;
  d.traffic_class = 104;
  d.static_rate = IBV_RATE_40_GBPS;
  d.ack_timeout = 11;
  d.path_mtu = IBV_MTU_1024;
  ibv_ah_attr ah{};
  ah.is_global = 1;
  QosDecision kept = d;
  keep_program_values(kept, ah, ProgramValues::kKeep);
  EXPECT_EQ(kept.sl, 5);
  EXPECT_EQ(kept.traffic_class, 104);
  EXPECT_EQ(kept.static_rate, IBV_RATE_40_GBPS);
  EXPECT_FALSE(kept.ack_timeout);  // a program at RTS always gives its own
  EXPECT_EQ(kept.path_mtu, IBV_MTU_1024);
  ah.sl = 1;
  ah.grh.traffic_class = 32;
  ah.static_rate = IBV_RATE_10_GBPS;
  kept = d;
  keep_program_values(kept, ah, ProgramValues::kKeep);
  EXPECT_FALSE(kept.sl);
  EXPECT_FALSE(kept.traffic_class);
  EXPECT_FALSE(kept.static_rate);
  QosDecision replaced = d;
  keep_program_values(replaced, ah, ProgramValues::kReplace);
  EXPECT_EQ(replaced.sl, 5);
  EXPECT_EQ(replaced.ack_timeout, 11);
}

}  // namespace
}  // namespace rdmaqos::providers
