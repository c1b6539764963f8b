// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA agent's pure parts: when it uses RMPP and holds issm, and the bytes it hands to umad_send
// for a table answer with and without RMPP (the kernel segments an RMPP send itself).
#include <gtest/gtest.h>

#include "rdma-qos/sa-client/path_record.h"
#include "rdma-qos/sa-responder/agent.h"

namespace rdmaqos::sad {
namespace {

TEST(RmppDecision, AutoIsOffUnderUmad2simOnlyAndOnOffAreForced) {
  const std::string hardware_maps =
      "7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libibumad.so.3\n";
  const std::string sim_maps = "7f00-7f10 r-xp 0 08:01 2 /usr/lib/umad2sim/libumad2sim.so\n";
  EXPECT_TRUE(use_rmpp(RmppMode::kAuto, "", hardware_maps));
  EXPECT_FALSE(use_rmpp(RmppMode::kAuto, "/usr/lib/umad2sim/libumad2sim.so", ""));
  EXPECT_FALSE(use_rmpp(RmppMode::kAuto, "libfoo.so:libumad2sim.so", hardware_maps));
  EXPECT_FALSE(use_rmpp(RmppMode::kAuto, "", sim_maps));
  EXPECT_TRUE(use_rmpp(RmppMode::kOn, "libumad2sim.so", sim_maps));
  EXPECT_FALSE(use_rmpp(RmppMode::kOff, "", hardware_maps));
}

// On hardware a held issm advertises an SM at the port that never answers SMInfo: auto holds it
// only under umad2sim, where unsolicited requests reach issm holders only.
TEST(IssmDecision, AutoHoldsItUnderUmad2simOnlyAndOnOffAreForced) {
  const std::string hardware_maps =
      "7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libibumad.so.3\n";
  const std::string sim_maps = "7f00-7f10 r-xp 0 08:01 2 /usr/lib/umad2sim/libumad2sim.so\n";
  EXPECT_FALSE(hold_issm(IssmMode::kAuto, "", hardware_maps));
  EXPECT_TRUE(hold_issm(IssmMode::kAuto, "/usr/lib/umad2sim/libumad2sim.so", ""));
  EXPECT_TRUE(hold_issm(IssmMode::kAuto, "", sim_maps));
  EXPECT_TRUE(hold_issm(IssmMode::kOn, "", hardware_maps));
  EXPECT_FALSE(hold_issm(IssmMode::kOff, "libumad2sim.so", sim_maps));
}

// A GetTableResp of `n` PathRecords.
sa::SaMad table_answer(size_t n) {
  sa::SaMad m;
  m.mad.base_version = 1;
  m.mad.mgmt_class = sa::kSaClass;
  m.mad.class_version = sa::kSaClassVersion;
  m.mad.method = sa::method::kGetTableResp;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = 0x42;
  m.sa.attr_offset = sa::kPathRecordSize / 8;
  for (size_t i = 0; i < n; ++i) {
    sa::PathRecord r;
    r.slid = static_cast<uint16_t>(i + 1);
    auto bytes = sa::encode_path_record(r);
    m.data.insert(m.data.end(), bytes->begin(), bytes->end());
  }
  return m;
}

TEST(EncodeAnswer, WithoutRmppCutsToWholeRecordsOfOneMad) {
  std::vector<uint8_t> bytes = encode_answer(table_answer(5), false, sa::kSaDataSize);
  // 200 bytes of SA data hold three 64-byte records.
  ASSERT_EQ(bytes.size(), sa::kSaDataOffset + 3 * sa::kPathRecordSize);
  auto back = sa::decode_sa_mad(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rmpp.version, sa::rmpp::kVersion);
  EXPECT_EQ(back->rmpp.type, sa::rmpp::kTypeData);
  EXPECT_EQ(back->rmpp.flags, sa::rmpp::kFlagActive | sa::rmpp::kFlagFirst | sa::rmpp::kFlagLast);
  EXPECT_EQ(back->rmpp.segment, 1u);
  EXPECT_EQ(back->rmpp.payload_length, sa::kSaHeaderSize + 3 * sa::kPathRecordSize);
}

TEST(EncodeAnswer, WithRmppSendsTheWholePayloadForTheKernelToSegment) {
  // 10 records: 640 bytes of SA data, four 200-byte segments on the wire.
  std::vector<uint8_t> bytes = encode_answer(table_answer(10), true, sa::kSaDataSize);
  ASSERT_EQ(bytes.size(), sa::kSaDataOffset + 10 * sa::kPathRecordSize);
  // The RMPP header a sender gives the kernel: version 1, type DATA, ACTIVE; the kernel sets
  // the segment number, FIRST/LAST and PayloadLength of each segment.
  EXPECT_EQ(bytes[sa::kRmppHeaderOffset], sa::rmpp::kVersion);
  EXPECT_EQ(bytes[sa::kRmppHeaderOffset + 1], sa::rmpp::kTypeData);
  EXPECT_EQ(bytes[sa::kRmppHeaderOffset + 2] & 0x07, sa::rmpp::kFlagActive);
  auto back = sa::decode_sa_mad(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->sa.attr_offset, sa::kPathRecordSize / 8);
  ASSERT_EQ(back->data.size(), 10 * sa::kPathRecordSize);
  for (size_t i = 0; i < 10; ++i) {
    auto r = sa::decode_path_record(std::span(back->data).subspan(i * sa::kPathRecordSize));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->slid, i + 1);
  }
}

TEST(EncodeAnswer, GetResponsesStayOneMadWithoutRmppHeader) {
  sa::SaMad m = table_answer(1);
  m.mad.method = sa::method::kGetResp;
  m.sa.attr_offset = 0;
  for (bool rmpp : {false, true}) {
    std::vector<uint8_t> bytes = encode_answer(m, rmpp, sa::kSaDataSize);
    EXPECT_EQ(bytes.size(), sa::kMadSize);
    EXPECT_EQ(bytes[sa::kRmppHeaderOffset + 2] & 0x07, 0);
  }
}

// An error response to a GetTable keeps its request's (absent) RMPP header, as OpenSM's does:
// clients see a plain MAD with the status.
TEST(EncodeAnswer, TableErrorsKeepTheRequestsRmppHeader) {
  sa::SaMad m = table_answer(0);
  m.mad.status = 0x0600;
  m.data.assign(sa::kSaDataSize, 0);
  std::vector<uint8_t> plain = encode_answer(m, false, sa::kSaDataSize);
  EXPECT_EQ(plain.size(), sa::kMadSize);
  EXPECT_EQ(plain[sa::kRmppHeaderOffset + 2] & 0x07, 0);
  m.rmpp.version = 1;
  m.rmpp.type = sa::rmpp::kTypeData;
  m.rmpp.flags = sa::rmpp::kFlagActive | sa::rmpp::kFlagFirst | sa::rmpp::kFlagLast;
  m.rmpp.segment = 1;
  m.rmpp.payload_length = 76;
  std::vector<uint8_t> active = encode_answer(m, false, sa::kSaDataSize);
  EXPECT_EQ(active[sa::kRmppHeaderOffset + 2] & 0x07, 0x07);
  EXPECT_EQ(sa::wire::get32(&active[sa::kRmppHeaderOffset + 8]), 76u);
}

}  // namespace
}  // namespace rdmaqos::sad
