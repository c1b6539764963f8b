// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service messages (see path_service_wire.h): fixed-layout questions, answers
// carrying the SA's records in their wire layout. Every length is checked before it is read.
#include "rdma-qos/sa-client/path_service_wire.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa::path_service {
namespace {

using namespace wire;

constexpr size_t kOpAt = 4, kFlagsAt = 5, kPortAt = 6, kNameLengthAt = 7, kIdAt = 8, kBudgetAt = 12,
                 kMaskAt = 16, kNameAt = 24, kRecordAt = 88;
constexpr size_t kStatusAt = 5, kCountAt = 6, kMadStatusAt = 12;
constexpr uint8_t kGetTable = 1;

bool known_op(uint8_t op) {
  return op >= static_cast<uint8_t>(Op::kClassPortInfo) &&
         op <= static_cast<uint8_t>(Op::kMultiPathRecord);
}

Error malformed(std::string what) {
  return make_error(ErrorCode::kMalformed, "path service message: " + std::move(what));
}

Result<void> check_magic(std::span<const uint8_t> bytes, size_t need, const char* kind) {
  if (bytes.size() < need)
    return make_error(ErrorCode::kTruncated, fmt::format("path service {} of {} bytes (needs {})",
                                                         kind, bytes.size(), need));
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin()))
    return malformed(fmt::format("not a version {} {}", kMagic[3], kind));
  return {};
}

}  // namespace

uint8_t wire_error_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTruncated: return 1;
    case ErrorCode::kMalformed: return 2;
    case ErrorCode::kMadStatus: return 3;
    case ErrorCode::kTimeout: return 4;
    case ErrorCode::kTransport: return 5;
    case ErrorCode::kInvalidArgument: return 6;
    case ErrorCode::kNotFound: return 7;
    case ErrorCode::kBusy: return 8;
  }
  return 5;
}

ErrorCode error_code_from_wire(uint8_t wire) {
  switch (wire) {
    case 1: return ErrorCode::kTruncated;
    case 2: return ErrorCode::kMalformed;
    case 3: return ErrorCode::kMadStatus;
    case 4: return ErrorCode::kTimeout;
    case 6: return ErrorCode::kInvalidArgument;
    case 7: return ErrorCode::kNotFound;
    case 8: return ErrorCode::kBusy;
    default: return ErrorCode::kTransport;
  }
}

Result<std::vector<uint8_t>> encode_question(const Question& q) {
  if (q.device.empty() || q.device.size() > kDeviceNameMax ||
      q.device.find('\0') != std::string::npos)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("device name '{}' cannot be sent (1..{} characters)", q.device,
                                  kDeviceNameMax));
  if (q.port == 0 || q.port == 255)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("port {} cannot be asked", q.port));
  std::vector<uint8_t> out(kQuestionSize, 0);
  uint8_t* p = out.data();
  std::copy(kMagic.begin(), kMagic.end(), p);
  p[kOpAt] = static_cast<uint8_t>(q.op);
  p[kFlagsAt] = q.query.get_table ? kGetTable : 0;
  p[kPortAt] = q.port;
  p[kNameLengthAt] = static_cast<uint8_t>(q.device.size());
  put32(p + kIdAt, q.id);
  put32(p + kBudgetAt, q.budget_ms);
  std::memcpy(p + kNameAt, q.device.data(), q.device.size());
  if (q.op != Op::kClassPortInfo) {
    put64(p + kMaskAt, q.query.comp_mask);
    auto record = encode_path_record(q.query.record);
    if (!record) return record.error();
    std::copy(record->begin(), record->end(), p + kRecordAt);
  }
  return out;
}

Result<Question> decode_question(std::span<const uint8_t> bytes) {
  if (auto ok = check_magic(bytes, kQuestionSize, "question"); !ok) return ok.error();
  if (bytes.size() != kQuestionSize)
    return malformed(fmt::format("question of {} bytes (exactly {})", bytes.size(), kQuestionSize));
  const uint8_t* p = bytes.data();
  if (!known_op(p[kOpAt])) return malformed(fmt::format("unknown op {}", p[kOpAt]));
  if ((p[kFlagsAt] & ~kGetTable) != 0)
    return malformed(fmt::format("unknown flags 0x{:x}", p[kFlagsAt]));
  Question q;
  q.op = static_cast<Op>(p[kOpAt]);
  q.query.get_table = (p[kFlagsAt] & kGetTable) != 0;
  q.port = p[kPortAt];
  if (q.port == 0 || q.port == 255) return malformed(fmt::format("port {}", q.port));
  const size_t name_length = p[kNameLengthAt];
  if (name_length == 0 || name_length > kDeviceNameMax)
    return malformed(fmt::format("device name length {}", name_length));
  q.device.assign(reinterpret_cast<const char*>(p + kNameAt), name_length);
  if (q.device.find('\0') != std::string::npos) return malformed("NUL in the device name");
  q.id = get32(p + kIdAt);
  q.budget_ms = get32(p + kBudgetAt);
  if (q.op != Op::kClassPortInfo) {
    q.query.comp_mask = get64(p + kMaskAt);
    auto record = decode_path_record(bytes.subspan(kRecordAt, kPathRecordSize));
    if (!record) return record.error();
    q.query.record = *record;
  }
  return q;
}

Result<std::vector<uint8_t>> encode_answer(const Answer& a) {
  std::vector<uint8_t> out(kAnswerHeaderSize, 0);
  std::copy(kMagic.begin(), kMagic.end(), out.begin());
  out[kOpAt] = static_cast<uint8_t>(a.op);
  put32(out.data() + kIdAt, a.id);
  auto put_error = [&out](const Error& e) {
    out[kStatusAt] = wire_error_code(e.code);
    const size_t length = std::min(e.message.size(), kMessageMax);
    put16(out.data() + kCountAt, static_cast<uint16_t>(length));
    put16(out.data() + kMadStatusAt, e.code == ErrorCode::kMadStatus ? e.mad_status : 0);
    out.insert(out.end(), e.message.begin(), e.message.begin() + static_cast<ptrdiff_t>(length));
  };
  if (a.op == Op::kClassPortInfo) {
    if (!a.class_port_info) {
      put_error(a.class_port_info.error());
      return out;
    }
    auto body = encode_class_port_info(*a.class_port_info);
    if (!body) return body.error();
    put16(out.data() + kCountAt, 1);
    out.insert(out.end(), body->begin(), body->end());
    return out;
  }
  if (!a.paths) {
    put_error(a.paths.error());
    return out;
  }
  const size_t count = std::min(a.paths->size(), kMaxRecords);
  put16(out.data() + kCountAt, static_cast<uint16_t>(count));
  for (size_t i = 0; i < count; ++i) {
    auto record = encode_path_record((*a.paths)[i]);
    if (!record) return record.error();
    out.insert(out.end(), record->begin(), record->end());
  }
  return out;
}

Result<Answer> decode_answer(std::span<const uint8_t> bytes) {
  if (auto ok = check_magic(bytes, kAnswerHeaderSize, "answer"); !ok) return ok.error();
  const uint8_t* p = bytes.data();
  if (!known_op(p[kOpAt])) return malformed(fmt::format("unknown op {}", p[kOpAt]));
  Answer a;
  a.op = static_cast<Op>(p[kOpAt]);
  a.id = get32(p + kIdAt);
  const size_t count = get16(p + kCountAt);
  std::span<const uint8_t> body = bytes.subspan(kAnswerHeaderSize);
  if (p[kStatusAt] != 0) {
    if (count > kMessageMax || body.size() != count)
      return malformed(fmt::format("error text of {} bytes, {} announced", body.size(), count));
    const ErrorCode code = error_code_from_wire(p[kStatusAt]);
    Error e = make_error(code, std::string(body.begin(), body.end()),
                         code == ErrorCode::kMadStatus ? get16(p + kMadStatusAt) : 0);
    if (a.op == Op::kClassPortInfo)
      a.class_port_info = e;
    else
      a.paths = e;
    return a;
  }
  if (a.op == Op::kClassPortInfo) {
    if (count != 1 || body.size() != kClassPortInfoSize)
      return malformed(fmt::format("ClassPortInfo answer of {} bytes", body.size()));
    auto info = decode_class_port_info(body);
    if (!info) return info.error();
    a.class_port_info = std::move(*info);
    return a;
  }
  if (count > kMaxRecords || body.size() != count * kPathRecordSize)
    return malformed(fmt::format("{} bytes of records, {} announced", body.size(), count));
  std::vector<PathRecord> paths;
  paths.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto record = decode_path_record(body.subspan(i * kPathRecordSize, kPathRecordSize));
    if (!record) return record.error();
    paths.push_back(*record);
  }
  a.paths = std::move(paths);
  return a;
}

}  // namespace rdmaqos::sa::path_service
