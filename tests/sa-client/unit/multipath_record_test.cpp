// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MultiPathRecord codec against a byte image written out by hand from the layout
// (Documentation/sa-wire-format.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "rdma-qos/sa-client/multipath_record.h"

namespace rdmaqos::sa {
namespace {

Gid gid_ending(uint8_t last) {
  return {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xC9, 0x03, 0, 0, 0, last};
}

std::vector<uint8_t> image() {
  constexpr std::array<uint8_t, 24> kFixed = {
      0x01, 0x23, 0x45, 0x40,  // 0 RawTraffic 0, FlowLabel 0x12345, HopLimit 0x40
      0x28,                    // 4 TClass
      0x82,                    // 5 Reversible 1, NumbPath 2
      0x80, 0x01,              // 6 P_Key
      0x01, 0x25,              // 8 QoSClass 0x012, SL 5
      0x84, 0x86, 0x48,        // 10 MTU exactly 2048, rate exactly 20G, lifetime < 8
      0x01,                    // 13 ServiceID[63:56]
      0x01,                    // 14 IndependenceSelector
      0x01, 0x02,              // 15 SGIDCount 1, 16 DGIDCount 2
      0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,  // 17 ServiceID[55:0]
  };
  std::vector<uint8_t> b(24 + 3 * 16, 0);
  std::copy(kFixed.begin(), kFixed.end(), b.begin());
  auto out = b.begin() + 24;
  for (uint8_t last : {1, 2, 3}) {
    Gid g = gid_ending(last);
    out = std::copy(g.begin(), g.end(), out);
  }
  return b;
}

MultiPathRecord expected_record() {
  MultiPathRecord r;
  r.flow_label = 0x12345;
  r.hop_limit = 0x40;
  r.tclass = 0x28;
  r.reversible = true;
  r.numb_path = 2;
  r.pkey = 0x8001;
  r.qos_class = 0x012;
  r.sl = 5;
  r.mtu_selector = Selector::kExactly;
  r.mtu = 4;
  r.rate_selector = Selector::kExactly;
  r.rate = 6;
  r.packet_life_selector = Selector::kLessThan;
  r.packet_life = 8;
  r.service_id = 0x0123456789ABCDEF;
  r.independence_selector = 1;
  r.sgids = {gid_ending(1)};
  r.dgids = {gid_ending(2), gid_ending(3)};
  return r;
}

TEST(MultiPathRecord, DecodesHandBuiltImage) {
  auto r = decode_multipath_record(image());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, expected_record());
}

TEST(MultiPathRecord, EncodesToHandBuiltImage) {
  auto bytes = encode_multipath_record(expected_record());
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, image());
}

TEST(MultiPathRecord, ServiceIdIsSplitAcrossTwoFields) {
  MultiPathRecord r;
  r.service_id = 0xAA00000000000055;
  auto bytes = encode_multipath_record(r);
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[13], 0xAA);
  EXPECT_EQ((*bytes)[17], 0x00);
  EXPECT_EQ((*bytes)[23], 0x55);
  EXPECT_EQ((*bytes)[14], 0x00);  // the independence selector sits between the halves
}

TEST(MultiPathRecord, RejectsGidListsLongerThanTheInput) {
  auto b = image();
  b.resize(b.size() - 1);
  auto r = decode_multipath_record(b);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTruncated);
  EXPECT_NE(r.error().message.find("2 DGIDs"), std::string::npos) << r.error().message;
}

TEST(MultiPathRecord, RejectsInputShorterThanTheFixedPart) {
  auto b = image();
  b.resize(23);
  EXPECT_EQ(decode_multipath_record(b).error().code, ErrorCode::kTruncated);
}

TEST(MultiPathRecord, RejectsTooManyGids) {
  MultiPathRecord r;
  r.sgids.resize(256);
  EXPECT_EQ(encode_multipath_record(r).error().code, ErrorCode::kInvalidArgument);
}

TEST(MultiPathRecordMask, BitsFollowTheLayout) {
  EXPECT_EQ(mpr_mask::kRawTraffic, 0x1u);
  EXPECT_EQ(mpr_mask::kFlowLabel, 0x4u);
  EXPECT_EQ(mpr_mask::kPKey, 0x80u);
  EXPECT_EQ(mpr_mask::kQosClass, 0x100u);
  EXPECT_EQ(mpr_mask::kSl, 0x200u);
  EXPECT_EQ(mpr_mask::kPacketLife, 0x8000u);
  EXPECT_EQ(mpr_mask::kServiceIdMsb, 0x10000u);
  EXPECT_EQ(mpr_mask::kIndependenceSelector, 0x20000u);
  EXPECT_EQ(mpr_mask::kSgidCount, 0x80000u);
  EXPECT_EQ(mpr_mask::kDgidCount, 0x100000u);
  EXPECT_EQ(mpr_mask::kServiceIdLsb, 0x200000u);
}

}  // namespace
}  // namespace rdmaqos::sa
