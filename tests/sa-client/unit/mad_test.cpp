// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SA MAD envelope: headers against hand-built bytes, status names, record extraction.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {
namespace {

// A GetTableResp for PathRecords as OpenSM sends it RMPP-active: first and last segment,
// PayloadLength 20 (SA header) + 2 records of 64 bytes = 148.
std::vector<uint8_t> table_response_image() {
  constexpr std::array<uint8_t, 56> kHeaders = {
      0x01, 0x03, 0x02, 0x92,  // base version, class SA, class version 2, GetTableResp
      0x00, 0x00, 0x00, 0x00,  // status, class specific
      0x00, 0x00, 0x00, 0x07, 0x12, 0x34, 0x56, 0x78,  // TID
      0x00, 0x35, 0x00, 0x00,                          // PathRecord, reserved
      0x00, 0x00, 0x00, 0x00,                          // attribute modifier
      0x01, 0x01, 0x07, 0x00,  // RMPP v1, DATA, flags active|first|last, status
      0x00, 0x00, 0x00, 0x01,  // segment 1
      0x00, 0x00, 0x00, 0x94,  // PayloadLength 148
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // SM_Key
      0x00, 0x08, 0x00, 0x00,                          // AttributeOffset 8 words
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30,  // ComponentMask DLID|SLID
  };
  std::vector<uint8_t> b(256, 0);
  std::copy(kHeaders.begin(), kHeaders.end(), b.begin());
  b[56 + 41] = 0x03;       // first record DLID 3
  b[56 + 64 + 41] = 0x04;  // second record DLID 4
  return b;
}

TEST(SaMad, DecodesHandBuiltHeaders) {
  auto m = decode_sa_mad(table_response_image());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->mad.method, method::kGetTableResp);
  EXPECT_EQ(m->mad.status, 0);
  EXPECT_EQ(m->mad.tid, 0x0000000712345678u);
  EXPECT_EQ(m->mad.attr_id, attr::kPathRecord);
  EXPECT_EQ(m->rmpp.version, 1);
  EXPECT_EQ(m->rmpp.type, rmpp::kTypeData);
  EXPECT_EQ(m->rmpp.flags, 7);
  EXPECT_EQ(m->rmpp.segment, 1u);
  EXPECT_EQ(m->rmpp.payload_length, 148u);
  EXPECT_EQ(m->sa.attr_offset, 8);
  EXPECT_EQ(m->sa.comp_mask, 0x30u);
  EXPECT_EQ(m->data.size(), 200u);
}

TEST(SaMad, EncodesToHandBuiltHeaders) {
  auto m = decode_sa_mad(table_response_image());
  ASSERT_TRUE(m);
  EXPECT_EQ(encode_sa_mad(*m), table_response_image());
}

TEST(SaMad, HeadersAndDataApartEncodeAsOneMad) {
  auto m = decode_sa_mad(table_response_image());
  ASSERT_TRUE(m);
  SaMad headers = *m;
  headers.data = {0xEE};  // not read: the data given apart is
  EXPECT_EQ(encode_sa_mad(headers, m->data), table_response_image());
}

TEST(SaMad, EncodedRequestIsAtLeastOneMad) {
  SaMad m;
  m.mad.method = method::kGet;
  EXPECT_EQ(encode_sa_mad(m).size(), 256u);
  m.data.resize(300);
  EXPECT_EQ(encode_sa_mad(m).size(), 356u);
}

TEST(SaMad, RejectsMadShorterThanTheHeaders) {
  auto b = table_response_image();
  b.resize(55);
  auto m = decode_sa_mad(b);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kTruncated);
  EXPECT_NE(m.error().message.find("55 bytes"), std::string::npos) << m.error().message;
}

TEST(SaMad, RejectsOtherManagementClasses) {
  auto b = table_response_image();
  b[1] = 0x81;  // directed-route SMP
  auto m = decode_sa_mad(b);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kMalformed);
}

TEST(SaMad, TableRecordsAreCountedByLength) {
  auto b = table_response_image();
  b.resize(56 + 2 * 64);  // a reassembled answer is exactly as long as its records
  auto m = decode_sa_mad(b);
  ASSERT_TRUE(m);
  auto records = response_records(*m, 64);
  ASSERT_TRUE(records) << records.error().message;
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0][41], 3);
  EXPECT_EQ((*records)[1][41], 4);
}

TEST(SaMad, PayloadLengthDoesNotLimitTheRecords) {
  auto b = table_response_image();
  b[35] = 76;  // OpenSM under umad2sim echoes the request's PayloadLength
  auto m = decode_sa_mad(b);
  ASSERT_TRUE(m);
  auto records = response_records(*m, 64);
  ASSERT_TRUE(records);
  EXPECT_EQ(records->size(), 3u);  // 200 bytes of data: three whole records
}

TEST(SaMad, TrailingPartialRecordIsIgnored) {
  auto b = table_response_image();
  b.resize(56 + 64 + 30);
  auto m = decode_sa_mad(b);
  ASSERT_TRUE(m);
  auto records = response_records(*m, 64);
  ASSERT_TRUE(records);
  EXPECT_EQ(records->size(), 1u);
}

TEST(SaMad, RejectsAttributeOffsetShorterThanTheRecord) {
  auto b = table_response_image();
  b[45] = 4;  // 32-byte records cannot hold 64-byte PathRecords
  auto m = decode_sa_mad(b);
  ASSERT_TRUE(m);
  auto records = response_records(*m, 64);
  ASSERT_FALSE(records);
  EXPECT_EQ(records.error().code, ErrorCode::kMalformed);
}

TEST(MadStatus, NamesSaSpecificCodes) {
  EXPECT_EQ(mad_status_name(0), "SUCCESS");
  EXPECT_EQ(mad_status_name(0x0100), "SA_NO_RESOURCES");
  EXPECT_EQ(mad_status_name(0x0200), "SA_REQ_INVALID");
  EXPECT_EQ(mad_status_name(0x0300), "SA_NO_RECORDS");
  EXPECT_EQ(mad_status_name(0x0400), "SA_TOO_MANY_RECORDS");
  EXPECT_EQ(mad_status_name(0x0500), "SA_INVALID_GID");
  EXPECT_EQ(mad_status_name(0x0600), "SA_INSUF_COMPS");
  EXPECT_EQ(mad_status_name(0x0700), "SA_REQ_DENIED");
  EXPECT_EQ(mad_status_name(0x0800), "SA_PRI_SUGGESTED");
  EXPECT_EQ(mad_status_name(0x0900), "SA_STATUS(9)");
}

TEST(MadStatus, NamesCommonBits) {
  EXPECT_EQ(mad_status_name(0x0001), "BUSY");
  EXPECT_EQ(mad_status_name(0x0002), "REDIRECT");
  EXPECT_EQ(mad_status_name(0x0004), "INVALID_FIELD(BAD_VERSION)");
  EXPECT_EQ(mad_status_name(0x000C), "INVALID_FIELD(METHOD_ATTR_UNSUPPORTED)");
  EXPECT_EQ(mad_status_name(0x001C), "INVALID_FIELD(INVALID_ATTR_VALUE)");
  EXPECT_EQ(mad_status_name(0x0301), "BUSY|SA_NO_RECORDS");
}

}  // namespace
}  // namespace rdmaqos::sa
