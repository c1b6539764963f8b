// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The interposer's address-vector decisions, table by table: which label each kind of QP gets
// in each mode, what is never touched, and SL / traffic class / rate / MTU application.
#include <gtest/gtest.h>

#include "rdma-qos/providers/av_policy.h"

namespace rdmaqos::providers {
namespace {

constexpr uint32_t kLqpn = 0x123, kRqpn = 0xabcd;
constexpr uint32_t kQpnLabel = 0x34a0b;  // RFC vector for (0x123, 0xabcd)

ibv_qp_attr rtr_attr(uint32_t label = 0) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.dest_qp_num = kRqpn;
  a.path_mtu = IBV_MTU_4096;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.flow_label = label;
  return a;
}

constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

VerbsSettings with_mode(const char* mode) {
  VerbsSettings s;
  s.flow_label = *parse_flow_label_setting(mode);
  return s;
}

struct LabelCase {
  const char* name;
  const char* mode;
  LinkKind link;
  uint32_t program_label;
  std::optional<CmConnection> cm;
  uint32_t expected_label;
  bool changed;
};

void PrintTo(const LabelCase& c, std::ostream* os) {
  *os << c.name;
}

class LabelTable : public ::testing::TestWithParam<LabelCase> {};

TEST_P(LabelTable, GivesTheExpectedLabel) {
  const auto& c = GetParam();
  ibv_qp_attr a = rtr_attr(c.program_label);
  int mask = kRtrMask;
  AvOutcome out = decide_qp_av(a, mask, kLqpn, c.link, c.cm, std::nullopt, with_mode(c.mode));
  EXPECT_EQ(a.ah_attr.grh.flow_label, c.expected_label) << out.reason;
  EXPECT_EQ(out.changed, c.changed) << out.reason;
  EXPECT_EQ(mask, kRtrMask);
  // Without an explanation asked for, the same decision and no reason text.
  ibv_qp_attr quiet = rtr_attr(c.program_label);
  int quiet_mask = kRtrMask;
  AvOutcome q =
      decide_qp_av(quiet, quiet_mask, kLqpn, c.link, c.cm, std::nullopt, with_mode(c.mode), false);
  EXPECT_EQ(quiet.ah_attr.grh.flow_label, c.expected_label);
  EXPECT_EQ(q.changed, c.changed);
  if (c.link == LinkKind::kRoceV2) {
    EXPECT_EQ(q.reason, "");
  }
}

// CM connection dport 3260, sport 40000: RFC label 0x27d7d (hand-computed in
// flow_label_mode_test), Linux label (40000*31+3260) & 0xfffff = 0x2f87c.
const CmConnection kCm{3260, 40000, false};
const CmConnection kCmAppLabel{3260, 40000, true};

INSTANTIATE_TEST_SUITE_P(
    Modes, LabelTable,
    ::testing::Values(
        LabelCase{"ZeroLabelBecomesQpnLabel", "rfc", LinkKind::kRoceV2, 0, std::nullopt, kQpnLabel,
                  true},
        LabelCase{"ProgramLabelKept", "rfc", LinkKind::kRoceV2, 0x777, std::nullopt, 0x777, false},
        LabelCase{"FixedLabelForZero", "0x12345", LinkKind::kRoceV2, 0, std::nullopt, 0x12345,
                  true},
        LabelCase{"FixedLabelKeepsProgramLabel", "0x12345", LinkKind::kRoceV2, 0x777, std::nullopt,
                  0x777, false},
        LabelCase{"OffLeavesZero", "off", LinkKind::kRoceV2, 0, std::nullopt, 0, false},
        LabelCase{"SpreadUsesQpnLabelForPlainQps", "spread", LinkKind::kRoceV2, 0, std::nullopt,
                  kQpnLabel, true},
        LabelCase{"CmLabelReplacesKernelLabel", "rfc", LinkKind::kRoceV2, 0x2f87c, kCm, 0x27d7d,
                  true},
        LabelCase{"CmLinuxModeKeepsKernelLabel", "linux", LinkKind::kRoceV2, 0x2f87c, kCm, 0x2f87c,
                  false},
        LabelCase{"CmApplicationLabelKept", "rfc", LinkKind::kRoceV2, 0x55555, kCmAppLabel, 0x55555,
                  false},
        LabelCase{"CmOffKeepsKernelLabel", "off", LinkKind::kRoceV2, 0x2f87c, kCm, 0x2f87c, false},
        LabelCase{"RoceV1Untouched", "rfc", LinkKind::kRoceV1, 0, std::nullopt, 0, false},
        LabelCase{"InfiniBandUntouched", "rfc", LinkKind::kInfiniBand, 0, std::nullopt, 0, false},
        LabelCase{"UnknownLinkUntouched", "rfc", LinkKind::kUnknown, 0, std::nullopt, 0, false}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(AvPolicy, NoAddressVectorNoChange) {
  ibv_qp_attr a = rtr_attr();
  int mask = IBV_QP_STATE;
  AvOutcome out =
      decide_qp_av(a, mask, kLqpn, LinkKind::kRoceV2, std::nullopt, std::nullopt, with_mode("rfc"));
  EXPECT_FALSE(out.changed);
  EXPECT_EQ(a.ah_attr.grh.flow_label, 0u);
}

TEST(AvPolicy, NoRemoteQpnNoQpnLabel) {
  ibv_qp_attr a = rtr_attr();
  int mask = IBV_QP_STATE | IBV_QP_AV;
  AvOutcome out =
      decide_qp_av(a, mask, kLqpn, LinkKind::kRoceV2, std::nullopt, std::nullopt, with_mode("rfc"));
  EXPECT_FALSE(out.changed);
}

TEST(AvPolicy, EnvironmentSlAndTclassApplyOnRoce) {
  VerbsSettings s = with_mode("off");
  s.sl = 3;
  s.traffic_class = 104;  // DSCP 26
  ibv_qp_attr a = rtr_attr();
  int mask = kRtrMask;
  AvOutcome out = decide_qp_av(a, mask, kLqpn, LinkKind::kRoceV2, std::nullopt, std::nullopt, s);
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(a.ah_attr.sl, 3);
  EXPECT_EQ(a.ah_attr.grh.traffic_class, 104);
}

TEST(AvPolicy, InfiniBandOnlyWhenToldTo) {
  VerbsSettings s = with_mode("rfc");
  s.sl = 5;
  ibv_qp_attr a = rtr_attr();
  a.ah_attr.is_global = 0;
  int mask = kRtrMask;
  EXPECT_FALSE(
      decide_qp_av(a, mask, kLqpn, LinkKind::kInfiniBand, std::nullopt, std::nullopt, s).changed);
  EXPECT_EQ(a.ah_attr.sl, 0);
  s.apply_on_ib = true;
  EXPECT_TRUE(
      decide_qp_av(a, mask, kLqpn, LinkKind::kInfiniBand, std::nullopt, std::nullopt, s).changed);
  EXPECT_EQ(a.ah_attr.sl, 5);
  EXPECT_EQ(a.ah_attr.grh.flow_label, 0u);  // no GRH, no label on IB
}

TEST(AvPolicy, DecisionWinsOverEnvironmentAndCapsMtu) {
  VerbsSettings s = with_mode("rfc");
  s.sl = 1;
  QosDecision d;
  d.sl = 6;
  d.static_rate = IBV_RATE_10_GBPS;
  d.path_mtu = IBV_MTU_1024;
  ibv_qp_attr a = rtr_attr();
  int mask = kRtrMask;
  decide_qp_av(a, mask, kLqpn, LinkKind::kRoceV2, std::nullopt, d, s);
  EXPECT_EQ(a.ah_attr.sl, 6);
  EXPECT_EQ(a.ah_attr.static_rate, IBV_RATE_10_GBPS);
  EXPECT_EQ(a.path_mtu, IBV_MTU_1024);
}

TEST(AvPolicy, DecisionNeverRaisesMtu) {
  QosDecision d;
  d.path_mtu = IBV_MTU_4096;
  ibv_qp_attr a = rtr_attr();
  a.path_mtu = IBV_MTU_1024;
  int mask = kRtrMask;
  decide_qp_av(a, mask, kLqpn, LinkKind::kRoceV2, std::nullopt, d, with_mode("off"));
  EXPECT_EQ(a.path_mtu, IBV_MTU_1024);
}

// UD address handles: a label only from a decision or a fixed setting, never over the
// program's own; everything else leaves the AH's label as it came.
struct AhCase {
  const char* name;
  const char* mode;
  LinkKind link;
  bool grh;
  uint32_t program_label;
  std::optional<uint32_t> decision_label;  // nullopt: no decision at all
  uint32_t expected_label;
  bool changed;
};

void PrintTo(const AhCase& c, std::ostream* os) {
  *os << c.name;
}

class AhLabelTable : public ::testing::TestWithParam<AhCase> {};

TEST_P(AhLabelTable, GivesTheExpectedLabel) {
  const auto& c = GetParam();
  ibv_ah_attr ah{};
  ah.is_global = c.grh ? 1 : 0;
  ah.grh.flow_label = c.program_label;
  std::optional<QosDecision> d;
  if (c.decision_label) {
    d.emplace();
    if (*c.decision_label != 0) d->flow_label = *c.decision_label;  // 0: a decision, no label
  }
  AvOutcome out = decide_ah(ah, c.link, d, with_mode(c.mode));
  EXPECT_EQ(ah.grh.flow_label, c.expected_label) << out.reason;
  EXPECT_EQ(out.changed, c.changed) << out.reason;
}

// 0x3898e: the RFC CM-port label of (0x123, 0xabcd), as an rdma_cm UD id's decision carries it.
constexpr uint32_t kUdLabel = 0x3898e;

INSTANTIATE_TEST_SUITE_P(
    Ah, AhLabelTable,
    ::testing::Values(
        AhCase{"RfcWithoutDecisionUntouched", "rfc", LinkKind::kRoceV2, true, 0, std::nullopt, 0,
               false},
        AhCase{"LinuxWithoutDecisionUntouched", "linux", LinkKind::kRoceV2, true, 0, std::nullopt,
               0, false},
        AhCase{"SpreadWithoutDecisionUntouched", "spread", LinkKind::kRoceV2, true, 0, std::nullopt,
               0, false},
        AhCase{"OffWithoutDecisionUntouched", "off", LinkKind::kRoceV2, true, 0, std::nullopt, 0,
               false},
        AhCase{"DecisionWithoutLabelUntouched", "rfc", LinkKind::kRoceV2, true, 0, 0u, 0, false},
        AhCase{"FixedLabelForZero", "0x999", LinkKind::kRoceV2, true, 0, std::nullopt, 0x999, true},
        AhCase{"DecisionLabelForZero", "rfc", LinkKind::kRoceV2, true, 0, kUdLabel, kUdLabel, true},
        AhCase{"DecisionLabelWinsOverFixed", "0x999", LinkKind::kRoceV2, true, 0, kUdLabel,
               kUdLabel, true},
        AhCase{"ProgramLabelKeptOverDecision", "rfc", LinkKind::kRoceV2, true, 0x777, kUdLabel,
               0x777, false},
        AhCase{"ProgramLabelKeptOverFixed", "0x999", LinkKind::kRoceV2, true, 0x777, std::nullopt,
               0x777, false},
        AhCase{"NoGrhNoLabel", "0x999", LinkKind::kRoceV2, false, 0, kUdLabel, 0, false},
        AhCase{"RoceV1NoLabel", "0x999", LinkKind::kRoceV1, true, 0, kUdLabel, 0, false},
        AhCase{"InfiniBandUntouched", "0x999", LinkKind::kInfiniBand, true, 0, kUdLabel, 0, false},
        AhCase{"UnknownLinkUntouched", "0x999", LinkKind::kUnknown, true, 0, kUdLabel, 0, false}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(AvPolicy, AhDecisionLabelAndLevelsTogether) {
  QosDecision d;
  d.sl = 3;
  d.traffic_class = 104;
  d.flow_label = kUdLabel;
  ibv_ah_attr ah{};
  ah.is_global = 1;
  AvOutcome out = decide_ah(ah, LinkKind::kRoceV2, d, with_mode("rfc"));
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(ah.grh.flow_label, kUdLabel);
  EXPECT_EQ(ah.sl, 3);
  EXPECT_EQ(ah.grh.traffic_class, 104);
  EXPECT_EQ(out.reason, "flow_label=0x3898e (decision's label) sl=3 tclass=104");
}

TEST(AvPolicy, SettingsFromConfigurationText) {
  VerbsSettings s = verbs_settings_from("spread", "4", "0x68", "1");
  EXPECT_EQ(s.flow_label.mode, FlowLabelMode::kSpread);
  EXPECT_EQ(s.sl, 4);
  EXPECT_EQ(s.traffic_class, 0x68);
  EXPECT_TRUE(s.apply_on_ib);
  VerbsSettings d = verbs_settings_from("bogus", "", "", "0");
  EXPECT_EQ(d.flow_label.mode, FlowLabelMode::kRfc);
  EXPECT_FALSE(d.sl);
  EXPECT_FALSE(d.traffic_class);
}

}  // namespace
}  // namespace rdmaqos::providers
