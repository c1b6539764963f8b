// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// ClassPortInfo codec against hand-built bytes, including the capability words OpenSM 3.3.23
// was seen sending with -Q (CapabilityMask 0x2602, CapabilityMask2 0xB5EA).
#include <gtest/gtest.h>

#include <vector>

#include "rdma-qos/sa-client/class_port_info.h"

namespace rdmaqos::sa {
namespace {

std::vector<uint8_t> opensm_image() {
  std::vector<uint8_t> b(72, 0);
  b[0] = 0x01;  // BaseVersion
  b[1] = 0x02;  // ClassVersion
  b[2] = 0x26;  // CapabilityMask 0x2602
  b[3] = 0x02;
  // CapabilityMask2 0xB5EA << 5 | RespTimeValue 18 = 0x0016BD52
  b[4] = 0x00;
  b[5] = 0x16;
  b[6] = 0xBD;
  b[7] = 0x52;
  b[28] = 0x00;  // RedirectLID 0x0012
  b[29] = 0x12;
  b[60] = 0x00;  // TrapLID 0x0001
  b[61] = 0x01;
  b[64] = 0x40;  // TrapHL 0x40, TrapQP 1
  b[67] = 0x01;
  b[68] = 0x80;  // TrapQ_Key 0x80010000
  b[69] = 0x01;
  return b;
}

TEST(ClassPortInfo, DecodesOpenSmCapabilities) {
  auto c = decode_class_port_info(opensm_image());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->base_version, 1);
  EXPECT_EQ(c->class_version, 2);
  EXPECT_EQ(c->capability_mask, 0x2602);
  EXPECT_EQ(c->capability_mask2, 0xB5EAu);
  EXPECT_EQ(c->resp_time_value, 18);
  EXPECT_TRUE(c->qos_supported());
  EXPECT_TRUE(c->multipath_supported());
  EXPECT_EQ(c->redirect_lid, 0x12);
  EXPECT_EQ(c->trap_lid, 1);
  EXPECT_EQ(c->trap_hl, 0x40);
  EXPECT_EQ(c->trap_qp, 1u);
  EXPECT_EQ(c->trap_qkey, 0x80010000u);
}

TEST(ClassPortInfo, QosBitIsBitOneOfCapabilityMask2) {
  auto b = opensm_image();
  b[7] = 0x12;  // 0xB5EA with bit 1 cleared = 0xB5E8: low byte of the word becomes 0x12
  auto c = decode_class_port_info(b);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->capability_mask2, 0xB5E8u);
  EXPECT_FALSE(c->qos_supported());
}

TEST(ClassPortInfo, RespTimeIsFourMicrosecondsTimesPowerOfTwo) {
  ClassPortInfo c;
  c.resp_time_value = 0;
  EXPECT_EQ(c.resp_time().count(), 4096);
  c.resp_time_value = 18;  // 4.096 us * 262144 = 1.073741824 s
  EXPECT_EQ(c.resp_time().count(), 1073741824);
}

TEST(ClassPortInfo, RoundTripsThroughTheEncoder) {
  auto c = decode_class_port_info(opensm_image());
  ASSERT_TRUE(c);
  auto bytes = encode_class_port_info(*c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, opensm_image());
}

TEST(ClassPortInfo, RejectsTruncatedInput) {
  auto b = opensm_image();
  b.resize(71);
  auto c = decode_class_port_info(b);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kTruncated);
}

}  // namespace
}  // namespace rdmaqos::sa
