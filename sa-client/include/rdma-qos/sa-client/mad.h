// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA MAD envelope (IBA vol 1 ch. 13.4 and 15.2): common MAD header, RMPP header and SA
// header codecs, MAD status decoding with names. Pure functions over bytes, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/common/result.h"

namespace rdmaqos::sa {

constexpr size_t kMadSize = 256;
constexpr size_t kMadHeaderSize = 24;
constexpr size_t kRmppHeaderOffset = 24;
constexpr size_t kSaHeaderOffset = 36;
constexpr size_t kSaDataOffset = 56;
constexpr size_t kSaDataSize = kMadSize - kSaDataOffset;  // 200 bytes per MAD / RMPP segment
// Bytes counted by RMPP PayloadLength besides the records: the SA header (bytes 36-55).
constexpr size_t kSaHeaderSize = kSaDataOffset - kSaHeaderOffset;

constexpr uint8_t kBaseVersion = 1;
constexpr uint8_t kSaClass = 0x03;
constexpr uint8_t kSaClassVersion = 2;
constexpr uint32_t kSaQp = 1;
constexpr uint32_t kSaQkey = 0x80010000;

namespace method {
constexpr uint8_t kGet = 0x01;
constexpr uint8_t kSet = 0x02;
constexpr uint8_t kGetResp = 0x81;
constexpr uint8_t kReport = 0x06;
constexpr uint8_t kReportResp = 0x86;
constexpr uint8_t kGetTable = 0x12;
constexpr uint8_t kGetTableResp = 0x92;
constexpr uint8_t kGetMulti = 0x14;
constexpr uint8_t kGetMultiResp = 0x94;
constexpr uint8_t kResponseBit = 0x80;
}  // namespace method

namespace attr {
constexpr uint16_t kClassPortInfo = 0x0001;
constexpr uint16_t kNotice = 0x0002;
constexpr uint16_t kInformInfo = 0x0003;
constexpr uint16_t kPathRecord = 0x0035;
constexpr uint16_t kMultiPathRecord = 0x003A;
}  // namespace attr

// MAD status (bytes 4-5). Bits 0-4 are common to every class, bits 8-15 are SA specific.
namespace status {
constexpr uint16_t kBusy = 0x0001;
constexpr uint16_t kRedirect = 0x0002;
constexpr uint16_t kInvalidFieldMask = 0x001C;
constexpr uint16_t kSaSpecificMask = 0xFF00;
// SA-specific codes (the value of bits 8-15).
constexpr uint8_t kNoResources = 1;
constexpr uint8_t kReqInvalid = 2;
constexpr uint8_t kNoRecords = 3;
constexpr uint8_t kTooManyRecords = 4;
constexpr uint8_t kInvalidGid = 5;
constexpr uint8_t kInsufComps = 6;
constexpr uint8_t kReqDenied = 7;
constexpr uint8_t kPriSuggested = 8;
}  // namespace status

// Names of the parts of a MAD status, e.g. "BUSY", "SA_NO_RECORDS",
// "INVALID_FIELD(METHOD_ATTR_UNSUPPORTED)", joined with '|'; "SUCCESS" for 0.
std::string mad_status_name(uint16_t mad_status);
// SA-specific code of a status (bits 8-15).
constexpr uint8_t sa_status_code(uint16_t mad_status) {
  return static_cast<uint8_t>(mad_status >> 8);
}

struct MadHeader {
  uint8_t base_version = kBaseVersion;
  uint8_t mgmt_class = kSaClass;
  uint8_t class_version = kSaClassVersion;
  uint8_t method = 0;  // R bit (0x80) included
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
};

namespace rmpp {
constexpr uint8_t kVersion = 1;
constexpr uint8_t kTypeData = 1;
constexpr uint8_t kTypeAck = 2;
constexpr uint8_t kTypeStop = 3;
constexpr uint8_t kTypeAbort = 4;
constexpr uint8_t kFlagActive = 0x1;
constexpr uint8_t kFlagFirst = 0x2;
constexpr uint8_t kFlagLast = 0x4;
}  // namespace rmpp

struct RmppHeader {
  uint8_t version = 0;
  uint8_t type = 0;
  uint8_t resp_time = 0;  // 5 bits (7:3 of byte 26)
  uint8_t flags = 0;      // 3 bits (2:0 of byte 26)
  uint8_t status = 0;
  uint32_t segment = 0;
  uint32_t payload_length = 0;  // PayloadLength (first/last segment) or NewWindowLast (ACK)

  bool active() const { return (flags & rmpp::kFlagActive) != 0; }
};

struct SaHeader {
  uint64_t sm_key = 0;
  uint16_t attr_offset = 0;  // record size in 8-byte words (GetTable responses)
  uint64_t comp_mask = 0;
};

// A whole SA MAD. `data` is the SA data: 200 bytes in a single MAD, any length once RMPP
// segments have been reassembled.
struct SaMad {
  MadHeader mad;
  RmppHeader rmpp;
  SaHeader sa;
  std::vector<uint8_t> data;
};

// Bytes of an SA MAD: at least 256 (data padded with zeros), longer when data exceeds 200 bytes
// (a payload the transport sends RMPP-active).
std::vector<uint8_t> encode_sa_mad(const SaMad& mad);
// The same with `data` as the MAD's data (mad.data is not read): a request is encoded from its
// fields without being copied into an SaMad first.
std::vector<uint8_t> encode_sa_mad(const SaMad& headers, std::span<const uint8_t> data);
// Decodes an SA MAD of at least 56 bytes. Rejects a wrong management class or base version.
Result<SaMad> decode_sa_mad(std::span<const uint8_t> bytes);

// Records in a response (GetResp: the one record; GetTableResp/GetMultiResp: every record of
// AttributeOffset*8 bytes in the data; a trailing partial record is ignored).
Result<std::vector<std::span<const uint8_t>>> response_records(const SaMad& mad,
                                                               size_t min_record_size);

// Big-endian field access shared by the codecs.
namespace wire {
inline uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
inline uint64_t get64(const uint8_t* p) {
  return uint64_t{get32(p)} << 32 | get32(p + 4);
}
inline void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
inline void put64(uint8_t* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
}  // namespace wire

}  // namespace rdmaqos::sa
