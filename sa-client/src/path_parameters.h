// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The 13-byte block of path parameters that PathRecord (at byte 44) and MultiPathRecord (at
// byte 0) share byte for byte: RawTraffic/FlowLabel/HopLimit, TClass, Reversible/NumbPath,
// P_Key, QoSClass/SL, and MTU, rate and lifetime with their selectors. One codec for both.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa::detail {

inline Error too_wide(const char* field, uint64_t value, int bits) {
  return make_error(ErrorCode::kInvalidArgument,
                    fmt::format("{} = {} does not fit in {} bits", field, value, bits));
}

inline uint8_t with_selector(Selector s, uint8_t value) {
  return static_cast<uint8_t>(static_cast<uint8_t>(s) << 6 | (value & 0x3F));
}

// A field too wide for the block, or nullopt.
template <typename Record>
std::optional<Error> check_path_parameters(const Record& r) {
  if (r.flow_label >= (1u << 20)) return too_wide("flow label", r.flow_label, 20);
  if (r.numb_path >= (1u << 7)) return too_wide("NumbPath", r.numb_path, 7);
  if (r.qos_class >= (1u << 12)) return too_wide("QoS class", r.qos_class, 12);
  if (r.sl >= 16) return too_wide("SL", r.sl, 4);
  if (r.mtu >= 64) return too_wide("MTU", r.mtu, 6);
  if (r.rate >= 64) return too_wide("rate", r.rate, 6);
  if (r.packet_life >= 64) return too_wide("packet lifetime", r.packet_life, 6);
  return std::nullopt;
}

template <typename Record>
void put_path_parameters(uint8_t* p, const Record& r) {
  using namespace wire;
  put32(p, (r.raw_traffic ? 1u << 31 : 0u) | r.flow_label << 8 | r.hop_limit);
  p[4] = r.tclass;
  p[5] = static_cast<uint8_t>((r.reversible ? 0x80 : 0) | r.numb_path);
  put16(p + 6, r.pkey);
  put16(p + 8, static_cast<uint16_t>(r.qos_class << 4 | r.sl));
  p[10] = with_selector(r.mtu_selector, r.mtu);
  p[11] = with_selector(r.rate_selector, r.rate);
  p[12] = with_selector(r.packet_life_selector, r.packet_life);
}

template <typename Record>
void get_path_parameters(const uint8_t* p, Record& r) {
  using namespace wire;
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
}

}  // namespace rdmaqos::sa::detail
