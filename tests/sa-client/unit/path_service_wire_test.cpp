// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node path service's messages: what one side encodes the other decodes unchanged, an
// error keeps its code, message and MAD status, and bytes that are no message are refused with
// the reason rather than read past their end.
#include "rdma-qos/sa-client/path_service_wire.h"

#include <gtest/gtest.h>

namespace rdmaqos::sa::path_service {
namespace {

Question path_question() {
  Question q;
  q.op = Op::kPathRecord;
  q.id = 0x01020304;
  q.device = "mlx5_0";
  q.port = 1;
  q.budget_ms = 2000;
  q.query.record.service_id = 0x1000000000000abcULL;
  q.query.record.dlid = 7;
  q.query.record.qos_class = 12;
  q.query.comp_mask = pr_mask::kServiceId | pr_mask::kDlid | pr_mask::kQosClass;
  q.query.get_table = false;
  return q;
}

TEST(PathServiceWire, QuestionRoundTrips) {
  Question q = path_question();
  auto bytes = encode_question(q);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(bytes->size(), kQuestionSize);
  auto back = decode_question(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->op, Op::kPathRecord);
  EXPECT_EQ(back->id, q.id);
  EXPECT_EQ(back->device, "mlx5_0");
  EXPECT_EQ(back->port, 1);
  EXPECT_EQ(back->budget_ms, 2000u);
  EXPECT_EQ(back->query.comp_mask, q.query.comp_mask);
  EXPECT_FALSE(back->query.get_table);
  EXPECT_EQ(back->query.record, q.query.record);
}

TEST(PathServiceWire, QuestionWithABadDeviceOrPortIsNotSent) {
  Question q = path_question();
  q.device = std::string(kDeviceNameMax + 1, 'x');
  EXPECT_EQ(encode_question(q).error().code, ErrorCode::kInvalidArgument);
  q = path_question();
  q.device.clear();
  EXPECT_EQ(encode_question(q).error().code, ErrorCode::kInvalidArgument);
  q = path_question();
  q.port = 0;
  EXPECT_EQ(encode_question(q).error().code, ErrorCode::kInvalidArgument);
}

TEST(PathServiceWire, MalformedQuestionsAreRefusedWithTheReason) {
  auto good = *encode_question(path_question());
  EXPECT_EQ(decode_question(std::span(good).first(20)).error().code, ErrorCode::kTruncated);
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(decode_question(longer).error().code, ErrorCode::kMalformed);
  auto bad = good;
  bad[0] = 'X';
  EXPECT_EQ(decode_question(bad).error().code, ErrorCode::kMalformed);
  bad = good;
  bad[4] = 9;  // op
  EXPECT_NE(decode_question(bad).error().message.find("unknown op 9"), std::string::npos);
  bad = good;
  bad[5] = 0x80;  // flags
  EXPECT_EQ(decode_question(bad).error().code, ErrorCode::kMalformed);
  bad = good;
  bad[6] = 255;  // port
  EXPECT_EQ(decode_question(bad).error().code, ErrorCode::kMalformed);
  bad = good;
  bad[7] = 65;  // device name length
  EXPECT_EQ(decode_question(bad).error().code, ErrorCode::kMalformed);
  bad = good;
  bad[7] = 10;  // takes NUL padding into the name
  EXPECT_EQ(decode_question(bad).error().code, ErrorCode::kMalformed);
}

TEST(PathServiceWire, PathAnswerRoundTrips) {
  Answer a;
  a.op = Op::kPathRecord;
  a.id = 42;
  PathRecord p;
  p.dlid = 7;
  p.slid = 3;
  p.sl = 5;
  p.mtu = 4;
  p.rate = 3;
  p.packet_life = 18;
  a.paths = std::vector<PathRecord>{p, p};
  auto bytes = encode_answer(a);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(bytes->size(), kAnswerHeaderSize + 2 * kPathRecordSize);
  auto back = decode_answer(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->id, 42u);
  ASSERT_TRUE(back->paths);
  ASSERT_EQ(back->paths->size(), 2u);
  EXPECT_EQ((*back->paths)[0], p);
}

TEST(PathServiceWire, ErrorAnswerKeepsCodeMessageAndMadStatus) {
  Answer a;
  a.op = Op::kPathRecord;
  a.id = 7;
  a.paths = make_error(ErrorCode::kMadStatus, "SA answered ERR_NO_RECORDS", 0x0300);
  auto back = decode_answer(*encode_answer(a));
  ASSERT_TRUE(back);
  ASSERT_FALSE(back->paths);
  EXPECT_EQ(back->paths.error().code, ErrorCode::kMadStatus);
  EXPECT_EQ(back->paths.error().message, "SA answered ERR_NO_RECORDS");
  EXPECT_EQ(back->paths.error().mad_status, 0x0300);
  a.paths = make_error(ErrorCode::kTimeout, "no answer");
  back = decode_answer(*encode_answer(a));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->paths.error().code, ErrorCode::kTimeout);
}

TEST(PathServiceWire, ClassPortInfoAnswerRoundTrips) {
  Answer a;
  a.op = Op::kClassPortInfo;
  a.id = 1;
  ClassPortInfo info;
  info.base_version = 1;
  info.class_version = 2;
  info.capability_mask = cap::kMultiPathSupported;
  info.capability_mask2 = cap2::kQosSupported;
  a.class_port_info = info;
  auto back = decode_answer(*encode_answer(a));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(back->class_port_info);
  EXPECT_TRUE(back->class_port_info->qos_supported());
  EXPECT_TRUE(back->class_port_info->multipath_supported());
}

TEST(PathServiceWire, MalformedAnswersAreRefused) {
  Answer a;
  a.id = 3;
  a.paths = std::vector<PathRecord>{PathRecord{}};
  auto good = *encode_answer(a);
  EXPECT_EQ(decode_answer(std::span(good).first(10)).error().code, ErrorCode::kTruncated);
  auto cut = good;
  cut.pop_back();  // a record one byte short
  EXPECT_EQ(decode_answer(cut).error().code, ErrorCode::kMalformed);
  auto bad = good;
  bad[6] = 0x7f;  // count far beyond the body
  EXPECT_EQ(decode_answer(bad).error().code, ErrorCode::kMalformed);
}

TEST(PathServiceWire, LongErrorTextsAndRecordListsAreCut) {
  Answer a;
  a.paths = make_error(ErrorCode::kTransport, std::string(5000, 'x'));
  auto back = decode_answer(*encode_answer(a));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->paths.error().message.size(), kMessageMax);
  a.paths = std::vector<PathRecord>(kMaxRecords + 10);
  back = decode_answer(*encode_answer(a));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->paths->size(), kMaxRecords);
}

TEST(PathServiceWire, EveryErrorCodeSurvivesTheWire) {
  for (ErrorCode c : {ErrorCode::kTruncated, ErrorCode::kMalformed, ErrorCode::kMadStatus,
                      ErrorCode::kTimeout, ErrorCode::kTransport, ErrorCode::kInvalidArgument,
                      ErrorCode::kNotFound, ErrorCode::kBusy}) {
    EXPECT_NE(wire_error_code(c), 0);
    EXPECT_EQ(error_code_from_wire(wire_error_code(c)), c);
  }
  EXPECT_EQ(error_code_from_wire(200), ErrorCode::kTransport);
}

}  // namespace
}  // namespace rdmaqos::sa::path_service
