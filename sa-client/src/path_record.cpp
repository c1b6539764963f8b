// PathRecord codec (layout: DESIGN.md section 2, IBA 15.2.5.16).
#include "rdma-qos/sa-client/path_record.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {

using namespace wire;

namespace {

Error too_wide(const char* field, uint64_t value, int bits) {
  return make_error(ErrorCode::kInvalidArgument,
                    fmt::format("{} = {} does not fit in {} bits", field, value, bits));
}

uint8_t with_selector(Selector s, uint8_t value) {
  return static_cast<uint8_t>(static_cast<uint8_t>(s) << 6 | (value & 0x3F));
}

}  // namespace

Result<std::array<uint8_t, kPathRecordSize>> encode_path_record(const PathRecord& r) {
  if (r.flow_label >= (1u << 20)) return too_wide("flow label", r.flow_label, 20);
  if (r.numb_path >= (1u << 7)) return too_wide("NumbPath", r.numb_path, 7);
  if (r.qos_class >= (1u << 12)) return too_wide("QoS class", r.qos_class, 12);
  if (r.sl >= 16) return too_wide("SL", r.sl, 4);
  if (r.mtu >= 64) return too_wide("MTU", r.mtu, 6);
  if (r.rate >= 64) return too_wide("rate", r.rate, 6);
  if (r.packet_life >= 64) return too_wide("packet lifetime", r.packet_life, 6);
  std::array<uint8_t, kPathRecordSize> out{};
  uint8_t* p = out.data();
  put64(p, r.service_id);
  std::copy(r.dgid.begin(), r.dgid.end(), p + 8);
  std::copy(r.sgid.begin(), r.sgid.end(), p + 24);
  put16(p + 40, r.dlid);
  put16(p + 42, r.slid);
  put32(p + 44, (r.raw_traffic ? 1u << 31 : 0u) | r.flow_label << 8 | r.hop_limit);
  p[48] = r.tclass;
  p[49] = static_cast<uint8_t>((r.reversible ? 0x80 : 0) | r.numb_path);
  put16(p + 50, r.pkey);
  put16(p + 52, static_cast<uint16_t>(r.qos_class << 4 | r.sl));
  p[54] = with_selector(r.mtu_selector, r.mtu);
  p[55] = with_selector(r.rate_selector, r.rate);
  p[56] = with_selector(r.packet_life_selector, r.packet_life);
  p[57] = r.preference;
  return out;
}

Result<PathRecord> decode_path_record(std::span<const uint8_t> bytes) {
  if (bytes.size() < kPathRecordSize)
    return make_error(ErrorCode::kTruncated, fmt::format("PathRecord of {} bytes (needs {})",
                                                         bytes.size(), kPathRecordSize));
  const uint8_t* p = bytes.data();
  PathRecord r;
  r.service_id = get64(p);
  std::copy(p + 8, p + 24, r.dgid.begin());
  std::copy(p + 24, p + 40, r.sgid.begin());
  r.dlid = get16(p + 40);
  r.slid = get16(p + 42);
  uint32_t w = get32(p + 44);
  r.raw_traffic = (w >> 31) != 0;
  r.flow_label = (w >> 8) & 0xFFFFF;
  r.hop_limit = static_cast<uint8_t>(w);
  r.tclass = p[48];
  r.reversible = (p[49] & 0x80) != 0;
  r.numb_path = p[49] & 0x7F;
  r.pkey = get16(p + 50);
  uint16_t qs = get16(p + 52);
  r.qos_class = qs >> 4;
  r.sl = qs & 0xF;
  r.mtu_selector = static_cast<Selector>(p[54] >> 6);
  r.mtu = p[54] & 0x3F;
  r.rate_selector = static_cast<Selector>(p[55] >> 6);
  r.rate = p[55] & 0x3F;
  r.packet_life_selector = static_cast<Selector>(p[56] >> 6);
  r.packet_life = p[56] & 0x3F;
  r.preference = p[57];
  return r;
}

}  // namespace rdmaqos::sa
