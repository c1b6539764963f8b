// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service protocol: one question or one answer per message on a local
// SOCK_SEQPACKET socket (rdma-qos-lsd listens, the preload module asks; see path_service_client.h).
// Integers are big-endian, as in a MAD; records travel in their SA wire layout (64 bytes for a
// PathRecord, 72 for ClassPortInfo), so neither side re-encodes what the SA sent. Pure codecs, no
// I/O; both decoders take untrusted bytes (the server's from any local user).
//
// Question (kQuestionSize bytes):
//    0  magic "RQP" and version 1
//    4  op: 1 ClassPortInfo, 2 PathRecord, 3 MultiPathRecord (the PathRecord query as one)
//    5  flags: bit 0 GetTable (else Get)
//    6  port number (1..254)
//    7  device name length (1..kDeviceNameMax)
//    8  question id (the answer echoes it)
//   12  the asker's budget in milliseconds (0: none; the service bounds it by its own)
//   16  component mask
//   24  device name, NUL-padded to kDeviceNameMax bytes
//   88  the PathRecord query's record (zero for ClassPortInfo)
// Answer (kAnswerHeaderSize bytes, then the body):
//    0  magic and version, as the question
//    4  op, echoed
//    5  status: 0 answered; else the error's code (wire_error_code, 1..)
//    6  count: records in the body (answered), or bytes of the message (failed)
//    8  question id, echoed
//   12  MAD status (failed with mad-status), else 0
//   14  reserved, 0
//   16  body: count records (PathRecord 64 bytes each, one ClassPortInfo of 72), or the message
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa::path_service {

// Where rdma-qos-lsd listens by default (the path_service knob of rdma-qos.conf).
inline constexpr const char* kDefaultSocket = "/run/rdma-qos/paths.sock";

inline constexpr std::array<uint8_t, 4> kMagic{'R', 'Q', 'P', 1};
inline constexpr size_t kDeviceNameMax = 64;  // IB_DEVICE_NAME_MAX
inline constexpr size_t kQuestionSize = 88 + kPathRecordSize;
inline constexpr size_t kAnswerHeaderSize = 16;
// A GetTable between two ports yields one record per path; LMC 7 on both ends gives 128 x 128,
// more than any asker installs. The service answers with at most this many, and an error text of
// at most kMessageMax bytes, so an answer always fits one message.
inline constexpr size_t kMaxRecords = 256;
inline constexpr size_t kMessageMax = 1024;
inline constexpr size_t kAnswerMax = kAnswerHeaderSize + kMaxRecords * kPathRecordSize;

enum class Op : uint8_t { kClassPortInfo = 1, kPathRecord = 2, kMultiPathRecord = 3 };

struct Question {
  Op op = Op::kPathRecord;
  uint32_t id = 0;
  std::string device;
  uint8_t port = 0;
  uint32_t budget_ms = 0;
  PathQuery query;  // record and comp_mask unused for ClassPortInfo
};

struct Answer {
  Op op = Op::kPathRecord;
  uint32_t id = 0;
  // The service's result: records for PathRecord and MultiPathRecord, a ClassPortInfo, or the
  // error the service met (its code, message and MAD status as the SA client gave them).
  Result<std::vector<PathRecord>> paths = std::vector<PathRecord>{};
  Result<ClassPortInfo> class_port_info = ClassPortInfo{};
};

// The error code on the wire (stable, never 0: the status byte), and back; an unknown number
// reads as a transport error.
uint8_t wire_error_code(ErrorCode code);
ErrorCode error_code_from_wire(uint8_t wire);

Result<std::vector<uint8_t>> encode_question(const Question& q);
Result<Question> decode_question(std::span<const uint8_t> bytes);

// A ClassPortInfo answer reads `class_port_info`, a path answer `paths`; the other is ignored.
// More than kMaxRecords records, or a longer message, are cut to the limit.
Result<std::vector<uint8_t>> encode_answer(const Answer& a);
// The answer's header (id, op) even when its body is an error: paths / class_port_info then hold
// the service's error. Only bytes that are no answer at all are an error here.
Result<Answer> decode_answer(std::span<const uint8_t> bytes);

}  // namespace rdmaqos::sa::path_service
