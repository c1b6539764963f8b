// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The interposer core with a fake provider behind it: the caller's attributes are never
// changed, a rejected change is retried unchanged, the registry's CM entries and ports are used.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

#include "fake_verbs_host.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/providers/verbs_interposer.h"

namespace rdmaqos::providers {
namespace {

struct Call {
  ibv_qp_attr attr;
  int mask;
};

std::vector<Call>& calls() {
  static std::vector<Call> c;
  return c;
}
int g_reject_changed = 0;  // reject calls whose label differs from this when non-zero

int fake_modify(ibv_qp*, ibv_qp_attr* attr, int mask) {
  calls().push_back({*attr, mask});
  if (g_reject_changed != 0 && attr->ah_attr.grh.flow_label != 0) return EINVAL;
  return 0;
}

// The fake provider's ibv_create_ah: records each call; rejects (EINVAL) labelled AHs when
// g_reject_labelled_ah, every AH when g_reject_every_ah.
std::vector<ibv_ah_attr>& ah_calls() {
  static std::vector<ibv_ah_attr> c;
  return c;
}
bool g_reject_labelled_ah = false, g_reject_every_ah = false;
ibv_ah g_fake_ah{};

ibv_ah* fake_create_ah(ibv_pd*, ibv_ah_attr* attr) {
  ah_calls().push_back(*attr);
  if (g_reject_every_ah || (g_reject_labelled_ah && attr->grh.flow_label != 0)) {
    errno = EINVAL;
    return nullptr;
  }
  return &g_fake_ah;
}

class Interposer : public ::testing::Test {
 protected:
  void SetUp() override {
    calls().clear();
    ah_calls().clear();
    g_reject_changed = 0;
    g_reject_labelled_ah = g_reject_every_ah = false;
    qp_.qp_num = 0x123;
    hooks_.fixed.flow_label = *parse_flow_label_setting("rfc");
    hooks_.on_link_kind = [this](ibv_context*, uint8_t port, uint8_t) {
      seen_port_ = port;
      return LinkKind::kRoceV2;
    };
    hooks_.on_qp_port = [](ibv_qp*) -> uint8_t { return 7; };
    hooks_.on_log_once = [this](const std::string& key, const std::string&) {
      logs_.push_back(key);
    };
    hooks_.on_record = [this](const std::string& line) { records_.push_back(line); };
  }
  void TearDown() override { QpRegistry::instance().erase(&qp_); }

  ibv_qp_attr rtr() {
    ibv_qp_attr a{};
    a.dest_qp_num = 0xabcd;
    a.ah_attr.is_global = 1;
    return a;
  }
  static constexpr int kMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN;

  ibv_qp qp_{};
  FakeVerbsHost hooks_;
  uint8_t seen_port_ = 0;
  std::vector<std::string> logs_, records_;
};

TEST_F(Interposer, PassesTheQpnLabelWithoutTouchingTheCallersAttr) {
  ibv_qp_attr a = rtr();
  EXPECT_EQ(interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_), 0);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].attr.ah_attr.grh.flow_label, 0x34a0bu);
  EXPECT_EQ(a.ah_attr.grh.flow_label, 0u);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_NE(records_[0].find("\"flow_label\":215563"), std::string::npos) << records_[0];
}

TEST_F(Interposer, RejectedChangeIsRetriedAsTheProgramAsked) {
  g_reject_changed = 1;
  ibv_qp_attr a = rtr();
  EXPECT_EQ(interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_), 0);
  ASSERT_EQ(calls().size(), 2u);
  EXPECT_EQ(calls()[1].attr.ah_attr.grh.flow_label, 0u);
  EXPECT_EQ(logs_, std::vector<std::string>{"modify_qp_rejected"});
}

// Without the test hook no reason is formatted on the way (it costs more than the decision on
// every connection), but a rejection's log still says what was refused.
TEST_F(Interposer, RejectionLogNamesTheChangeWithoutTheTestHook) {
  hooks_.on_record = nullptr;
  std::vector<std::string> messages;
  hooks_.on_log_once = [&messages](const std::string&, const std::string& m) {
    messages.push_back(m);
  };
  g_reject_changed = 1;
  ibv_qp_attr a = rtr();
  EXPECT_EQ(interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_), 0);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("flow_label=0x34a0b (QPNs)"), std::string::npos) << messages[0];
}

TEST_F(Interposer, RejectedAhLogNamesTheChangeWithoutTheTestHook) {
  hooks_.on_record = nullptr;
  hooks_.fixed.flow_label = *parse_flow_label_setting("0x42");
  std::vector<std::string> messages;
  hooks_.on_log_once = [&messages](const std::string&, const std::string& m) {
    messages.push_back(m);
  };
  g_reject_labelled_ah = true;
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  EXPECT_EQ(interpose_create_ah(&pd, &ah, &fake_create_ah, hooks_), &g_fake_ah);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("flow_label=0x00042 (fixed label)"), std::string::npos) << messages[0];
}

TEST_F(Interposer, CallsWithoutAddressVectorPassStraightThrough) {
  ibv_qp_attr a{};
  a.port_num = 2;
  EXPECT_EQ(interpose_modify_qp(&qp_, &a, IBV_QP_STATE | IBV_QP_PORT, &fake_modify, hooks_), 0);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_TRUE(records_.empty());
}

TEST_F(Interposer, TheInitTransitionLeavesNoEntry) {
  // Nothing is noted for INIT: rdma_cm QPs never need its port or P_Key index, and a plain-verbs
  // QP asks for them at RTR (the probes).
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 2;
  init.pkey_index = 5;
  interpose_modify_qp(&qp_, &init, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX, &fake_modify,
                      hooks_);
  EXPECT_FALSE(QpRegistry::instance().find(&qp_));
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_);
  EXPECT_EQ(seen_port_, 7);  // queried
}

TEST_F(Interposer, PortQueriedWhenUnknown) {
  ibv_qp_attr a = rtr();
  interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_);
  EXPECT_EQ(seen_port_, 7);
}

TEST_F(Interposer, RegisteredCmConnectionGetsTheCmPortLabel) {
  QpRegistry::instance().set_cm(&qp_, CmConnection{3260, 40000, false});
  ibv_qp_attr a = rtr();
  a.ah_attr.grh.flow_label = 0x2f87c;  // the kernel's sport*31+dport
  interpose_modify_qp(&qp_, &a, kMask, &fake_modify, hooks_);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].attr.ah_attr.grh.flow_label, 0x27d7du);
}

TEST_F(Interposer, AhGetsFixedLabel) {
  hooks_.fixed.flow_label = *parse_flow_label_setting("0x42");
  static ibv_ah_attr seen{};
  static ibv_ah fake_ah{};
  auto fake_create = [](ibv_pd*, ibv_ah_attr* attr) -> ibv_ah* {
    seen = *attr;
    return &fake_ah;
  };
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  EXPECT_EQ(interpose_create_ah(&pd, &ah, fake_create, hooks_), &fake_ah);
  EXPECT_EQ(seen.grh.flow_label, 0x42u);
  EXPECT_EQ(ah.grh.flow_label, 0u);
}

// Rate limits: a level's rate-limit (enum ibv_rate 7 = 40 Gb/s = 40,000,000 kbit/s) is set on
// the transition to RTS; a device without rate limiting logs once and the call still succeeds.
TEST_F(Interposer, RtsTransitionSetsTheLevelsRateLimit) {
  QosDecision d;
  d.static_rate = 7;
  d.pace = true;
  QpRegistry::instance().set_decision(&qp_, d);
  std::vector<uint32_t> asked;
  hooks_.on_rate_limit = [&asked](ibv_qp*, uint32_t kbps) {
    asked.push_back(kbps);
    return 0;
  };
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(interpose_modify_qp(&qp_, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN, &fake_modify, hooks_), 0);
  EXPECT_EQ(asked, std::vector<uint32_t>{40000000u});
  EXPECT_TRUE(logs_.empty());
}

TEST_F(Interposer, DeviceWithoutRateLimitingLogsOnceAndSucceeds) {
  QosDecision d;
  d.static_rate = 3;  // 10 Gb/s
  d.pace = true;
  QpRegistry::instance().set_decision(&qp_, d);
  hooks_.on_rate_limit = [](ibv_qp*, uint32_t) { return EOPNOTSUPP; };
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(interpose_modify_qp(&qp_, &rts, IBV_QP_STATE, &fake_modify, hooks_), 0);
  EXPECT_EQ(logs_, std::vector<std::string>{"rate_limit_unsupported"});
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_NE(records_[0].find("\"rate_limit_kbps\":10000000"), std::string::npos) << records_[0];
}

TEST_F(Interposer, NoRateLimitWithoutARateOrOutsideRts) {
  int n = 0;
  hooks_.on_rate_limit = [&n](ibv_qp*, uint32_t) {
    ++n;
    return 0;
  };
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  interpose_modify_qp(&qp_, &rts, IBV_QP_STATE, &fake_modify, hooks_);  // no decision
  QosDecision d;
  d.static_rate = 7;
  d.pace = true;
  QpRegistry::instance().set_decision(&qp_, d);
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  interpose_modify_qp(&qp_, &init, IBV_QP_STATE, &fake_modify, hooks_);
  EXPECT_EQ(n, 0);
}

// A static rate alone (an SA's path rate on InfiniBand) stays in the address vector: the QP
// takes no entry of the device's pacing table for it.
TEST_F(Interposer, AStaticRateThatIsNoRateLimitIsNotPaced) {
  QosDecision d;
  d.static_rate = 7;
  QpRegistry::instance().set_decision(&qp_, d);
  int n = 0;
  hooks_.on_rate_limit = [&n](ibv_qp*, uint32_t) {
    ++n;
    return 0;
  };
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(interpose_modify_qp(&qp_, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN, &fake_modify, hooks_), 0);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(calls().size(), 1u);
}

// The level's packet lifetime reaches the QP as the kernel derives it: local ACK timeout =
// lifetime + 1, set on the RTS transition that carries a timeout; the caller's attr untouched.
TEST_F(Interposer, RtsTransitionGetsTheLevelsAckTimeout) {
  QosDecision d;
  d.ack_timeout = 11;
  QpRegistry::instance().set_decision(&qp_, d);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 17;  // what the kernel's CM gives RoCE paths
  const int mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
  EXPECT_EQ(interpose_modify_qp(&qp_, &rts, mask, &fake_modify, hooks_), 0);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].attr.timeout, 11);
  EXPECT_EQ(calls()[0].mask, mask);
  EXPECT_EQ(rts.timeout, 17);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_NE(records_[0].find(R"("timeout":11,"program_timeout":17,"rc":0)"), std::string::npos)
      << records_[0];
}

TEST_F(Interposer, AckTimeoutOnlyOnRtsTransitionsThatCarryOne) {
  QosDecision d;
  d.ack_timeout = 11;
  QpRegistry::instance().set_decision(&qp_, d);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 17;
  interpose_modify_qp(&qp_, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN, &fake_modify, hooks_);
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.timeout = 17;
  interpose_modify_qp(&qp_, &rtr, IBV_QP_STATE | IBV_QP_TIMEOUT, &fake_modify, hooks_);
  ASSERT_EQ(calls().size(), 2u);
  EXPECT_EQ(calls()[0].attr.timeout, 17);
  EXPECT_EQ(calls()[1].attr.timeout, 17);
}

int reject_timeout_11(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  fake_modify(qp, attr, mask);
  return attr->timeout == 11 ? EINVAL : 0;
}

TEST_F(Interposer, RefusedAckTimeoutFallsBackToTheProgramsCall) {
  QosDecision d;
  d.ack_timeout = 11;
  QpRegistry::instance().set_decision(&qp_, d);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 17;
  EXPECT_EQ(
      interpose_modify_qp(&qp_, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT, &reject_timeout_11, hooks_),
      0);
  ASSERT_EQ(calls().size(), 2u);
  EXPECT_EQ(calls()[1].attr.timeout, 17);
  EXPECT_EQ(logs_, std::vector<std::string>{"ack_timeout"});
}

TEST_F(Interposer, AhForARegisteredUdPeerGetsItsDecision) {
  static ibv_ah_attr seen{};
  static ibv_ah fake_ah{};
  auto fake_create = [](ibv_pd*, ibv_ah_attr* attr) -> ibv_ah* {
    seen = *attr;
    return &fake_ah;
  };
  ibv_pd pd{}, other_pd{};
  ibv_gid peer{};
  peer.raw[10] = peer.raw[11] = 0xff;
  peer.raw[12] = 10;
  peer.raw[15] = 1;  // ::ffff:10.0.0.1
  QosDecision d;
  d.sl = 2;
  QpRegistry::instance().set_peer_decision(&pd, peer, d);
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.grh.dgid = peer;
  ah.grh.traffic_class = 136;  // what the received datagram carried
  interpose_create_ah(&pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.sl, 2);
  EXPECT_EQ(seen.grh.traffic_class, 136);
  interpose_create_ah(&other_pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.sl, 0);
  QpRegistry::instance().erase_peer(&pd, peer);
  interpose_create_ah(&pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.sl, 0);
}

TEST_F(Interposer, RejectedAhChangeIsRetriedAsTheProgramAsked) {
  hooks_.fixed.flow_label = *parse_flow_label_setting("0x42");
  g_reject_labelled_ah = true;
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  EXPECT_EQ(interpose_create_ah(&pd, &ah, &fake_create_ah, hooks_), &g_fake_ah);
  ASSERT_EQ(ah_calls().size(), 2u);
  EXPECT_EQ(ah_calls()[0].grh.flow_label, 0x42u);
  EXPECT_EQ(ah_calls()[1].grh.flow_label, 0u);
  EXPECT_EQ(logs_, std::vector<std::string>{"create_ah_rejected"});
}

TEST_F(Interposer, AhTheProviderRefusesAnywayFailsAsItWouldHave) {
  hooks_.fixed.flow_label = *parse_flow_label_setting("0x42");
  g_reject_every_ah = true;
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  errno = 0;
  EXPECT_EQ(interpose_create_ah(&pd, &ah, &fake_create_ah, hooks_), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ah_calls().size(), 2u);
}

// After an exception (caught at the module's C boundary), finish() gives the provider's answer
// when it already gave one and makes the program's call otherwise: the provider never runs a
// call twice that it already answered.
TEST_F(Interposer, ExceptionAfterASuccessfulChangedCallKeepsItsAnswer) {
  hooks_.on_record = [](const std::string&) { throw std::runtime_error("test hook"); };
  ibv_qp_attr a = rtr();
  ModifyQpCall call(&fake_modify, &qp_, &a, kMask);
  EXPECT_THROW(interpose_modify_qp(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), 0);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].attr.ah_attr.grh.flow_label, 0x34a0bu);
}

TEST_F(Interposer, ExceptionAfterTheRtsCallKeepsItsAnswer) {
  QosDecision d;
  d.static_rate = 7;
  d.pace = true;
  QpRegistry::instance().set_decision(&qp_, d);
  hooks_.on_rate_limit = [](ibv_qp*, uint32_t) -> int { throw std::runtime_error("rate limit"); };
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  ModifyQpCall call(&fake_modify, &qp_, &rts, IBV_QP_STATE);
  EXPECT_THROW(interpose_modify_qp(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), 0);
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(Interposer, ExceptionBeforeAnyCallMakesTheProgramsCallOnce) {
  hooks_.on_link_kind = [](ibv_context*, uint8_t, uint8_t) -> LinkKind {
    throw std::runtime_error("probe");
  };
  ibv_qp_attr a = rtr();
  ModifyQpCall call(&fake_modify, &qp_, &a, kMask);
  EXPECT_THROW(interpose_modify_qp(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), 0);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].attr.ah_attr.grh.flow_label, 0u);
  EXPECT_EQ(calls()[0].mask, kMask);
}

TEST_F(Interposer, ExceptionAfterARejectedChangeMakesTheProgramsCall) {
  g_reject_changed = 1;
  hooks_.on_log_once = [](const std::string&, const std::string&) {
    throw std::runtime_error("log");
  };
  ibv_qp_attr a = rtr();
  ModifyQpCall call(&fake_modify, &qp_, &a, kMask);
  EXPECT_THROW(interpose_modify_qp(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), 0);
  ASSERT_EQ(calls().size(), 2u);
  EXPECT_EQ(calls()[1].attr.ah_attr.grh.flow_label, 0u);
}

TEST_F(Interposer, AFailedProgramsCallIsAnAnswerToo) {
  g_reject_changed = 1;
  ibv_qp_attr a = rtr();
  a.ah_attr.grh.flow_label = 0x777;  // the program's own label, which the fake rejects
  ModifyQpCall call(&fake_modify, &qp_, &a, kMask);
  EXPECT_EQ(call.call(&a, kMask), EINVAL);
  EXPECT_EQ(call.finish(), EINVAL);
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(Interposer, ExceptionAfterACreatedAhKeepsThatAh) {
  hooks_.fixed.flow_label = *parse_flow_label_setting("0x42");
  hooks_.on_record = [](const std::string&) { throw std::runtime_error("test hook"); };
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  CreateAhCall call(&fake_create_ah, &pd, &ah);
  EXPECT_THROW(interpose_create_ah(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), &g_fake_ah);
  ASSERT_EQ(ah_calls().size(), 1u);
  EXPECT_EQ(ah_calls()[0].grh.flow_label, 0x42u);
}

TEST_F(Interposer, ExceptionBeforeTheAhIsCreatedCreatesTheProgramsOnce) {
  hooks_.on_link_kind = [](ibv_context*, uint8_t, uint8_t) -> LinkKind {
    throw std::runtime_error("probe");
  };
  ibv_pd pd{};
  ibv_ah_attr ah{};
  ah.is_global = 1;
  CreateAhCall call(&fake_create_ah, &pd, &ah);
  EXPECT_THROW(interpose_create_ah(call, hooks_), std::runtime_error);
  EXPECT_EQ(call.finish(), &g_fake_ah);
  EXPECT_EQ(ah_calls().size(), 1u);
}

// A UD id's decision carries its CM-port label: an AH the program creates for that peer without
// a label of its own (from a received datagram's work completion, say) gets it; one with the
// program's label, or for another peer, keeps its own.
TEST_F(Interposer, AhForARegisteredUdPeerGetsTheDecisionsLabel) {
  static ibv_ah_attr seen{};
  static ibv_ah fake_ah{};
  auto fake_create = [](ibv_pd*, ibv_ah_attr* attr) -> ibv_ah* {
    seen = *attr;
    return &fake_ah;
  };
  ibv_pd pd{};
  ibv_gid peer{}, stranger{};
  peer.raw[10] = peer.raw[11] = stranger.raw[10] = stranger.raw[11] = 0xff;
  peer.raw[12] = stranger.raw[12] = 10;
  peer.raw[15] = 1;      // ::ffff:10.0.0.1
  stranger.raw[15] = 3;  // ::ffff:10.0.0.3
  QosDecision d;
  d.flow_label = 0x3898e;
  QpRegistry::instance().set_peer_decision(&pd, peer, d);
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.grh.dgid = peer;
  interpose_create_ah(&pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.grh.flow_label, 0x3898eu);
  EXPECT_EQ(ah.grh.flow_label, 0u);
  ah.grh.flow_label = 0x777;
  interpose_create_ah(&pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.grh.flow_label, 0x777u);
  ah.grh.flow_label = 0;
  ah.grh.dgid = stranger;
  interpose_create_ah(&pd, &ah, fake_create, hooks_);
  EXPECT_EQ(seen.grh.flow_label, 0u);
  QpRegistry::instance().erase_peer(&pd, peer);
}

// Stands in for the provider's ibv_destroy_qp while another thread creates a QP at the address
// it frees and the rdma_cm layer registers that QP (its CM ports) before the call returns.
int destroy_then_reuse(ibv_qp* qp) {
  QpRegistry::instance().set_cm(qp, CmConnection{7471, 40000, false});
  return 0;
}

TEST(DestroyQp, ForgetsTheQp) {
  ibv_qp qp{};
  QpRegistry::instance().mark_rdma_cm(&qp);
  EXPECT_EQ(interpose_destroy_qp(&qp, [](ibv_qp*) { return 0; }), 0);
  EXPECT_FALSE(QpRegistry::instance().find(&qp));
}

TEST(DestroyQp, KeepsTheEntryOfAQpCreatedAtTheFreedAddress) {
  ibv_qp qp{};
  QpRegistry::instance().mark_rdma_cm(&qp);
  EXPECT_EQ(interpose_destroy_qp(&qp, &destroy_then_reuse), 0);
  auto entry = QpRegistry::instance().find(&qp);
  ASSERT_TRUE(entry);
  ASSERT_TRUE(entry->cm);
  EXPECT_EQ(entry->cm->dport, 7471);
  EXPECT_FALSE(entry->rdma_cm);  // the new QP's entry, not the destroyed one's
  QpRegistry::instance().erase(&qp);
}

// The flag is sticky for the process: these tests need one where no test registered such a level
// yet (ctest runs each test in a process of its own; a whole-binary run skips them).
constexpr const char* kRtsValuesSeen =
    "an earlier test in this process registered a level with a timeout or rate";

// Until some QP is given a level with an ACK timeout or a rate, RTS transitions need no look-up;
// once one is, every later RTS looks.
TEST(QpRegistryRtsValues, OnlyALevelWithATimeoutOrARateTurnsTheLookUpOn) {
  if (QpRegistry::instance().any_rts_values()) GTEST_SKIP() << kRtsValuesSeen;
  ibv_qp a{};
  ibv_qp b{};
  QosDecision plain;
  plain.sl = 3;
  QpRegistry::instance().set_decision(&a, plain);
  EXPECT_FALSE(QpRegistry::instance().any_rts_values());
  QosDecision timed;
  timed.ack_timeout = 11;
  QpRegistry::instance().register_rdma_cm(&b, std::nullopt, timed);
  EXPECT_TRUE(QpRegistry::instance().any_rts_values());
  QpRegistry::instance().erase(&a);
  QpRegistry::instance().erase(&b);
  EXPECT_TRUE(QpRegistry::instance().any_rts_values());
}

// The transitions the interposers pass on as the program made them.
TEST(ModifyQpBookkeeping, InitIsAndRtrWithAnAddressVectorIsNot) {
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  EXPECT_TRUE(modify_qp_is_bookkeeping(init, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX));
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  EXPECT_FALSE(modify_qp_is_bookkeeping(rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN));
}

TEST(ModifyQpBookkeeping, RtsIsUntilSomeLevelHasATimeoutOrARateLimit) {
  if (QpRegistry::instance().any_rts_values()) GTEST_SKIP() << kRtsValuesSeen;
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  const int mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
  EXPECT_TRUE(modify_qp_is_bookkeeping(rts, mask));
  ibv_qp qp{};
  QosDecision path_rate;  // a static rate that paces nothing gives an RTS nothing to do
  path_rate.static_rate = 7;
  QpRegistry::instance().set_decision(&qp, path_rate);
  EXPECT_TRUE(modify_qp_is_bookkeeping(rts, mask));
  QosDecision rated;
  rated.static_rate = 7;
  rated.pace = true;
  QpRegistry::instance().set_decision(&qp, rated);
  EXPECT_FALSE(modify_qp_is_bookkeeping(rts, mask));
  QpRegistry::instance().erase(&qp);
}

TEST(DestroyQp, ReturnsTheProvidersAnswer) {
  ibv_qp qp{};
  EXPECT_EQ(interpose_destroy_qp(&qp, [](ibv_qp*) { return EBUSY; }), EBUSY);
}

}  // namespace
}  // namespace rdmaqos::providers
