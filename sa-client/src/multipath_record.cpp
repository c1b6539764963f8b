// MultiPathRecord codec (layout: DESIGN.md section 2, IBA 15.2.5.20).
#include "rdma-qos/sa-client/multipath_record.h"

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

constexpr size_t kMaxGids = 255;

}  // namespace

Result<std::vector<uint8_t>> encode_multipath_record(const MultiPathRecord& r) {
  if (r.flow_label >= (1u << 20)) return too_wide("flow label", r.flow_label, 20);
  if (r.numb_path >= (1u << 7)) return too_wide("NumbPath", r.numb_path, 7);
  if (r.qos_class >= (1u << 12)) return too_wide("QoS class", r.qos_class, 12);
  if (r.sl >= 16) return too_wide("SL", r.sl, 4);
  if (r.mtu >= 64) return too_wide("MTU", r.mtu, 6);
  if (r.rate >= 64) return too_wide("rate", r.rate, 6);
  if (r.packet_life >= 64) return too_wide("packet lifetime", r.packet_life, 6);
  if (r.independence_selector > 3)
    return too_wide("independence selector", r.independence_selector, 2);
  if (r.sgids.size() > kMaxGids || r.dgids.size() > kMaxGids)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{} SGIDs and {} DGIDs: at most {} each", r.sgids.size(),
                                  r.dgids.size(), kMaxGids));
  std::vector<uint8_t> out(kMultiPathRecordFixedSize + 16 * (r.sgids.size() + r.dgids.size()), 0);
  uint8_t* p = out.data();
  put32(p, (r.raw_traffic ? 1u << 31 : 0u) | r.flow_label << 8 | r.hop_limit);
  p[4] = r.tclass;
  p[5] = static_cast<uint8_t>((r.reversible ? 0x80 : 0) | r.numb_path);
  put16(p + 6, r.pkey);
  put16(p + 8, static_cast<uint16_t>(r.qos_class << 4 | r.sl));
  p[10] = with_selector(r.mtu_selector, r.mtu);
  p[11] = with_selector(r.rate_selector, r.rate);
  p[12] = with_selector(r.packet_life_selector, r.packet_life);
  p[13] = static_cast<uint8_t>(r.service_id >> 56);
  p[14] = r.independence_selector;
  p[15] = static_cast<uint8_t>(r.sgids.size());
  p[16] = static_cast<uint8_t>(r.dgids.size());
  for (int i = 0; i < 7; ++i) p[17 + i] = static_cast<uint8_t>(r.service_id >> (8 * (6 - i)));
  uint8_t* g = p + kMultiPathRecordFixedSize;
  for (const Gid& gid : r.sgids) g = std::copy(gid.begin(), gid.end(), g);
  for (const Gid& gid : r.dgids) g = std::copy(gid.begin(), gid.end(), g);
  return out;
}

Result<MultiPathRecord> decode_multipath_record(std::span<const uint8_t> bytes) {
  if (bytes.size() < kMultiPathRecordFixedSize)
    return make_error(ErrorCode::kTruncated,
                      fmt::format("MultiPathRecord of {} bytes (needs at least {})", bytes.size(),
                                  kMultiPathRecordFixedSize));
  const uint8_t* p = bytes.data();
  MultiPathRecord r;
  uint32_t w = get32(p);
  r.raw_traffic = (w >> 31) != 0;
  r.flow_label = (w >> 8) & 0xFFFFF;
  r.hop_limit = static_cast<uint8_t>(w);
  r.tclass = p[4];
  r.reversible = (p[5] & 0x80) != 0;
  r.numb_path = p[5] & 0x7F;
  r.pkey = get16(p + 6);
  uint16_t qs = get16(p + 8);
  r.qos_class = qs >> 4;
  r.sl = qs & 0xF;
  r.mtu_selector = static_cast<Selector>(p[10] >> 6);
  r.mtu = p[10] & 0x3F;
  r.rate_selector = static_cast<Selector>(p[11] >> 6);
  r.rate = p[11] & 0x3F;
  r.packet_life_selector = static_cast<Selector>(p[12] >> 6);
  r.packet_life = p[12] & 0x3F;
  r.service_id = uint64_t{p[13]} << 56;
  for (int i = 0; i < 7; ++i) r.service_id |= uint64_t{p[17 + i]} << (8 * (6 - i));
  r.independence_selector = p[14] & 0x3;
  size_t sgids = p[15], dgids = p[16];
  size_t need = kMultiPathRecordFixedSize + 16 * (sgids + dgids);
  if (bytes.size() < need)
    return make_error(ErrorCode::kTruncated,
                      fmt::format("MultiPathRecord announces {} SGIDs and {} DGIDs ({} bytes) but "
                                  "has {} bytes",
                                  sgids, dgids, need, bytes.size()));
  const uint8_t* g = p + kMultiPathRecordFixedSize;
  auto take = [&g] {
    Gid gid{};
    std::copy(g, g + 16, gid.begin());
    g += 16;
    return gid;
  };
  for (size_t i = 0; i < sgids; ++i) r.sgids.push_back(take());
  for (size_t i = 0; i < dgids; ++i) r.dgids.push_back(take());
  return r;
}

}  // namespace rdmaqos::sa
