// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RDMA_QOS_FLOW_LABEL values and the label each mode gives.
#include <gtest/gtest.h>

#include "rdma-qos/providers/flow_label_mode.h"

namespace rdmaqos::providers {
namespace {

TEST(FlowLabelMode, ParsesNamedModesCaseInsensitively) {
  EXPECT_EQ(parse_flow_label_setting("rfc")->mode, FlowLabelMode::kRfc);
  EXPECT_EQ(parse_flow_label_setting(" Linux ")->mode, FlowLabelMode::kLinux);
  EXPECT_EQ(parse_flow_label_setting("SPREAD")->mode, FlowLabelMode::kSpread);
  EXPECT_EQ(parse_flow_label_setting("off")->mode, FlowLabelMode::kOff);
  EXPECT_EQ(parse_flow_label_setting("")->mode, FlowLabelMode::kRfc);
}

TEST(FlowLabelMode, ParsesFixedLabelsInDecimalAndHex) {
  auto hex = parse_flow_label_setting("0x12345");
  ASSERT_TRUE(hex);
  EXPECT_EQ(hex->mode, FlowLabelMode::kFixed);
  EXPECT_EQ(hex->fixed_label, 0x12345u);
  EXPECT_EQ(parse_flow_label_setting("1048575")->fixed_label, 0xFFFFFu);
}

TEST(FlowLabelMode, RejectsZeroTooLargeAndGarbageWithAReason) {
  for (const char* bad : {"0", "0x100000", "1048576", "fast", "0x", "12ab", "-1"}) {
    auto setting = parse_flow_label_setting(bad);
    ASSERT_FALSE(setting) << bad;
    EXPECT_EQ(setting.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(setting.error().message.find("invalid flow label setting"), std::string::npos) << bad;
  }
}

TEST(FlowLabelMode, ToStringRoundTrips) {
  for (const char* s : {"rfc", "linux", "spread", "off", "0x12345"})
    EXPECT_EQ(to_string(*parse_flow_label_setting(s)), s);
}

TEST(FlowLabelMode, CmLabelPerMode) {
  // dport 3260, sport 40000: RFC = fold32to20(3260 * 40000) computed by hand:
  // 130400000 = 0x07C5BF00; ^>>16 -> 0x07C5B8C5; ^>>8 -> 0x07C27D7D; & 0xFFFFF = 0x27D7D.
  EXPECT_EQ(*cm_flow_label({FlowLabelMode::kRfc, 0}, 3260, 40000), 0x27D7Du);
  EXPECT_EQ(*cm_flow_label({FlowLabelMode::kLinux, 0}, 3260, 40000),
            (40000u * 31 + 3260) & 0xFFFFF);
  EXPECT_EQ(*cm_flow_label({FlowLabelMode::kFixed, 0x777}, 3260, 40000), 0x777u);
  EXPECT_FALSE(cm_flow_label({FlowLabelMode::kOff, 0}, 3260, 40000));
}

TEST(FlowLabelMode, QpnLabelPerMode) {
  EXPECT_EQ(*qpn_flow_label({FlowLabelMode::kRfc, 0}, 0x123, 0xabcd), 0x34a0bu);
  EXPECT_EQ(*qpn_flow_label({FlowLabelMode::kLinux, 0}, 0x123, 0xabcd), 0x34a0bu);
  EXPECT_EQ(*qpn_flow_label({FlowLabelMode::kFixed, 5}, 0x123, 0xabcd), 5u);
  EXPECT_FALSE(qpn_flow_label({FlowLabelMode::kOff, 0}, 0x123, 0xabcd));
}

TEST(ParseUnsigned, BoundsAndBases) {
  EXPECT_EQ(parse_unsigned("65535", 65535), 65535u);
  EXPECT_FALSE(parse_unsigned("65536", 65535));
  EXPECT_EQ(parse_unsigned("0xFFFF", 65535), 65535u);
  EXPECT_FALSE(parse_unsigned("18446744073709551616", UINT64_MAX));
  EXPECT_EQ(parse_unsigned("18446744073709551615", UINT64_MAX), UINT64_MAX);
}

}  // namespace
}  // namespace rdmaqos::providers
