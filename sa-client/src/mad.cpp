// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SA MAD envelope codecs and MAD status names.
#include "rdma-qos/sa-client/mad.h"

#include <fmt/format.h>

namespace rdmaqos::sa {

using namespace wire;

std::string mad_status_name(uint16_t mad_status) {
  if (mad_status == 0) return "SUCCESS";
  std::string out;
  auto add = [&out](std::string_view part) {
    if (!out.empty()) out += '|';
    out += part;
  };
  if (mad_status & status::kBusy) add("BUSY");
  if (mad_status & status::kRedirect) add("REDIRECT");
  switch ((mad_status & status::kInvalidFieldMask) >> 2) {
    case 0: break;
    case 1: add("INVALID_FIELD(BAD_VERSION)"); break;
    case 2: add("INVALID_FIELD(METHOD_UNSUPPORTED)"); break;
    case 3: add("INVALID_FIELD(METHOD_ATTR_UNSUPPORTED)"); break;
    case 7: add("INVALID_FIELD(INVALID_ATTR_VALUE)"); break;
    default: add(fmt::format("INVALID_FIELD({})", (mad_status & status::kInvalidFieldMask) >> 2));
  }
  if (mad_status & 0x00E0) add(fmt::format("RESERVED(0x{:x})", mad_status & 0x00E0));
  switch (sa_status_code(mad_status)) {
    case 0: break;
    case status::kNoResources: add("SA_NO_RESOURCES"); break;
    case status::kReqInvalid: add("SA_REQ_INVALID"); break;
    case status::kNoRecords: add("SA_NO_RECORDS"); break;
    case status::kTooManyRecords: add("SA_TOO_MANY_RECORDS"); break;
    case status::kInvalidGid: add("SA_INVALID_GID"); break;
    case status::kInsufComps: add("SA_INSUF_COMPS"); break;
    case status::kReqDenied: add("SA_REQ_DENIED"); break;
    case status::kPriSuggested: add("SA_PRI_SUGGESTED"); break;
    default: add(fmt::format("SA_STATUS({})", sa_status_code(mad_status)));
  }
  return out;
}

std::vector<uint8_t> encode_sa_mad(const SaMad& m) {
  return encode_sa_mad(m, m.data);
}

std::vector<uint8_t> encode_sa_mad(const SaMad& m, std::span<const uint8_t> data) {
  std::vector<uint8_t> out(std::max(kMadSize, kSaDataOffset + data.size()), 0);
  uint8_t* p = out.data();
  p[0] = m.mad.base_version;
  p[1] = m.mad.mgmt_class;
  p[2] = m.mad.class_version;
  p[3] = m.mad.method;
  put16(p + 4, m.mad.status);
  put16(p + 6, m.mad.class_specific);
  put64(p + 8, m.mad.tid);
  put16(p + 16, m.mad.attr_id);
  put32(p + 20, m.mad.attr_mod);
  p[24] = m.rmpp.version;
  p[25] = m.rmpp.type;
  p[26] = static_cast<uint8_t>((m.rmpp.resp_time & 0x1F) << 3 | (m.rmpp.flags & 0x7));
  p[27] = m.rmpp.status;
  put32(p + 28, m.rmpp.segment);
  put32(p + 32, m.rmpp.payload_length);
  put64(p + 36, m.sa.sm_key);
  put16(p + 44, m.sa.attr_offset);
  put64(p + 48, m.sa.comp_mask);
  std::copy(data.begin(), data.end(), out.begin() + kSaDataOffset);
  return out;
}

Result<SaMad> decode_sa_mad(std::span<const uint8_t> bytes) {
  if (bytes.size() < kSaDataOffset)
    return make_error(
        ErrorCode::kTruncated,
        fmt::format("SA MAD of {} bytes: the headers alone need {}", bytes.size(), kSaDataOffset));
  const uint8_t* p = bytes.data();
  SaMad m;
  m.mad.base_version = p[0];
  m.mad.mgmt_class = p[1];
  m.mad.class_version = p[2];
  m.mad.method = p[3];
  m.mad.status = get16(p + 4);
  m.mad.class_specific = get16(p + 6);
  m.mad.tid = get64(p + 8);
  m.mad.attr_id = get16(p + 16);
  m.mad.attr_mod = get32(p + 20);
  if (m.mad.base_version != kBaseVersion)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("MAD base version {} (expected 1)", m.mad.base_version));
  if (m.mad.mgmt_class != kSaClass)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("management class 0x{:02x} is not SA (0x03)", m.mad.mgmt_class));
  m.rmpp.version = p[24];
  m.rmpp.type = p[25];
  m.rmpp.resp_time = p[26] >> 3;
  m.rmpp.flags = p[26] & 0x7;
  m.rmpp.status = p[27];
  m.rmpp.segment = get32(p + 28);
  m.rmpp.payload_length = get32(p + 32);
  m.sa.sm_key = get64(p + 36);
  m.sa.attr_offset = get16(p + 44);
  m.sa.comp_mask = get64(p + 48);
  m.data.assign(bytes.begin() + kSaDataOffset, bytes.end());
  return m;
}

Result<std::vector<std::span<const uint8_t>>> response_records(const SaMad& m,
                                                               size_t min_record_size) {
  std::vector<std::span<const uint8_t>> out;
  std::span<const uint8_t> data(m.data);
  const uint8_t method = m.mad.method;
  if (method == method::kGetResp) {
    if (data.size() < min_record_size)
      return make_error(ErrorCode::kTruncated,
                        fmt::format("GetResp carries {} bytes of data, the record needs {}",
                                    data.size(), min_record_size));
    out.push_back(data);
    return out;
  }
  if (method != method::kGetTableResp && method != method::kGetMultiResp)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("method 0x{:02x} is not a response", method));
  // The record count comes from the length alone: the kernel trims a reassembled RMPP
  // answer to its exact size, and PayloadLength cannot be trusted (OpenSM under umad2sim
  // echoes the request's RMPP header into its GetMultiResp).
  if (data.empty()) return out;
  size_t record_size = size_t{m.sa.attr_offset} * 8;
  if (record_size == 0)
    return make_error(ErrorCode::kMalformed, "table response with AttributeOffset 0");
  if (record_size < min_record_size)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("AttributeOffset {} ({} bytes) is shorter than the record ({})",
                                  m.sa.attr_offset, record_size, min_record_size));
  for (size_t off = 0; off + record_size <= data.size(); off += record_size)
    out.push_back(data.subspan(off, record_size));
  return out;
}

}  // namespace rdmaqos::sa
