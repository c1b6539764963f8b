// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PathRecord codec against a byte image written out by hand from the layout
// (Documentation/sa-wire-format.md) and against struct ibv_path_record from rdma-core's
// infiniband/sa.h.
#include <endian.h>
#include <gtest/gtest.h>
#include <infiniband/sa.h>

#include <cstring>
#include <vector>

#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa {
namespace {

// Every field distinct and non-zero, so a misplaced byte shows.
const std::vector<uint8_t> kImage = {
    0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x0C, 0xBC,  // 0 ServiceID
    0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 8 DGID
    0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x00, 0x03,  //
    0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 24 SGID
    0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x00, 0x02,  //
    0x00, 0x03, 0x00, 0x02,                          // 40 DLID 3, 42 SLID 2
    0x81, 0x23, 0x45, 0x40,              // 44 RawTraffic 1, FlowLabel 0x12345, HopLimit 0x40
    0x28,                                // 48 TClass
    0xFF,                                // 49 Reversible 1, NumbPath 127
    0xFF, 0xFF,                          // 50 P_Key
    0xAB, 0xC3,                          // 52 QoSClass 0xABC, SL 3
    0x84,                                // 54 MTU selector 2 (exactly), MTU 4 (2048)
    0x86,                                // 55 rate selector 2, rate 6 (20 Gb/s)
    0xC8,                                // 56 lifetime selector 3 (smallest), lifetime 8
    0x01,                                // 57 Preference
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 58 reserved
};

PathRecord expected_record() {
  PathRecord r;
  r.service_id = 0x1060CBC;
  r.dgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xC9, 0x03, 0, 0, 0, 3};
  r.sgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xC9, 0x03, 0, 0, 0, 2};
  r.dlid = 3;
  r.slid = 2;
  r.raw_traffic = true;
  r.flow_label = 0x12345;
  r.hop_limit = 0x40;
  r.tclass = 0x28;
  r.reversible = true;
  r.numb_path = 127;
  r.pkey = 0xFFFF;
  r.qos_class = 0xABC;
  r.sl = 3;
  r.mtu_selector = Selector::kExactly;
  r.mtu = 4;
  r.rate_selector = Selector::kExactly;
  r.rate = 6;
  r.packet_life_selector = Selector::kBest;
  r.packet_life = 8;
  r.preference = 1;
  return r;
}

TEST(PathRecord, DecodesHandBuiltImage) {
  auto r = decode_path_record(kImage);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, expected_record());
}

TEST(PathRecord, EncodesToHandBuiltImage) {
  auto bytes = encode_path_record(expected_record());
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(std::vector<uint8_t>(bytes->begin(), bytes->end()), kImage);
}

TEST(PathRecord, MatchesIbvPathRecordLayout) {
  static_assert(sizeof(ibv_path_record) == kPathRecordSize);
  auto bytes = encode_path_record(expected_record());
  ASSERT_TRUE(bytes);
  ibv_path_record ibv;
  std::memcpy(&ibv, bytes->data(), sizeof ibv);
  EXPECT_EQ(be64toh(ibv.service_id), 0x1060CBCu);
  EXPECT_EQ(ibv.dgid.raw[15], 3);
  EXPECT_EQ(ibv.sgid.raw[15], 2);
  EXPECT_EQ(be16toh(ibv.dlid), 3);
  EXPECT_EQ(be16toh(ibv.slid), 2);
  EXPECT_EQ(be32toh(ibv.flowlabel_hoplimit), 0x81234540u);
  EXPECT_EQ(ibv.tclass, 0x28);
  EXPECT_EQ(ibv.reversible_numpath, 0xFF);
  EXPECT_EQ(be16toh(ibv.pkey), 0xFFFF);
  EXPECT_EQ(be16toh(ibv.qosclass_sl), 0xABC3);
  EXPECT_EQ(ibv.mtu, 0x84);
  EXPECT_EQ(ibv.rate, 0x86);
  EXPECT_EQ(ibv.packetlifetime, 0xC8);
  EXPECT_EQ(ibv.preference, 1);
}

TEST(PathRecord, DecodesWhatIbvPathRecordHolds) {
  ibv_path_record ibv{};
  ibv.service_id = htobe64(0x13F1234);
  ibv.dlid = htobe16(0x00C0);
  ibv.qosclass_sl = htobe16(0x0057);  // QoS class 5, SL 7
  ibv.mtu = 0x45;                     // less than 4096
  ibv.rate = 0x03;                    // greater than 10 Gb/s
  ibv.packetlifetime = 0x92;          // exactly 18
  auto r = decode_path_record(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&ibv), sizeof ibv));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->service_id, 0x13F1234u);
  EXPECT_EQ(r->dlid, 0xC0);
  EXPECT_EQ(r->qos_class, 5);
  EXPECT_EQ(r->sl, 7);
  EXPECT_EQ(r->mtu_selector, Selector::kLessThan);
  EXPECT_EQ(r->mtu, 5);
  EXPECT_EQ(r->rate_selector, Selector::kGreaterThan);
  EXPECT_EQ(r->rate, 3);
  EXPECT_EQ(r->packet_life_selector, Selector::kExactly);
  EXPECT_EQ(r->packet_life, 18);
}

TEST(PathRecord, RejectsTruncatedInput) {
  auto r = decode_path_record(std::span<const uint8_t>(kImage).first(63));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTruncated);
  EXPECT_NE(r.error().message.find("63"), std::string::npos) << r.error().message;
}

TEST(PathRecord, RejectsOverWideFieldsInsteadOfTruncating) {
  PathRecord r;
  r.sl = 16;
  EXPECT_EQ(encode_path_record(r).error().code, ErrorCode::kInvalidArgument);
  r = {};
  r.qos_class = 0x1000;
  EXPECT_EQ(encode_path_record(r).error().code, ErrorCode::kInvalidArgument);
  r = {};
  r.flow_label = 1u << 20;
  EXPECT_EQ(encode_path_record(r).error().code, ErrorCode::kInvalidArgument);
  r = {};
  r.mtu = 64;
  EXPECT_EQ(encode_path_record(r).error().code, ErrorCode::kInvalidArgument);
}

TEST(PathRecordMask, BitsFollowTheLayout) {
  EXPECT_EQ(pr_mask::kServiceId, 0x3u);
  EXPECT_EQ(pr_mask::kDgid, 0x4u);
  EXPECT_EQ(pr_mask::kSgid, 0x8u);
  EXPECT_EQ(pr_mask::kDlid, 0x10u);
  EXPECT_EQ(pr_mask::kSlid, 0x20u);
  EXPECT_EQ(pr_mask::kRawTraffic, 0x40u);
  EXPECT_EQ(pr_mask::kFlowLabel, 0x100u);
  EXPECT_EQ(pr_mask::kHopLimit, 0x200u);
  EXPECT_EQ(pr_mask::kTClass, 0x400u);
  EXPECT_EQ(pr_mask::kReversible, 0x800u);
  EXPECT_EQ(pr_mask::kNumbPath, 0x1000u);
  EXPECT_EQ(pr_mask::kPKey, 0x2000u);
  EXPECT_EQ(pr_mask::kQosClass, 0x4000u);
  EXPECT_EQ(pr_mask::kSl, 0x8000u);
  EXPECT_EQ(pr_mask::kMtuSelector, 0x10000u);
  EXPECT_EQ(pr_mask::kMtu, 0x20000u);
  EXPECT_EQ(pr_mask::kRateSelector, 0x40000u);
  EXPECT_EQ(pr_mask::kRate, 0x80000u);
  EXPECT_EQ(pr_mask::kPacketLifeSelector, 0x100000u);
  EXPECT_EQ(pr_mask::kPacketLife, 0x200000u);
  EXPECT_EQ(pr_mask::kPreference, 0x400000u);
  EXPECT_EQ(pr_mask::kAll, 0x7FFF7Fu);
}

}  // namespace
}  // namespace rdmaqos::sa
