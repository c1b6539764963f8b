// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// ClassPortInfo codec (IBA 13.4.8.1; layout of bytes 0-71).
#include "rdma-qos/sa-client/class_port_info.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {

using namespace wire;

std::chrono::nanoseconds ClassPortInfo::resp_time() const {
  // 4.096 us * 2^value = 4096 ns << value.
  return std::chrono::nanoseconds(int64_t{4096} << (resp_time_value & 0x1F));
}

Result<std::vector<uint8_t>> encode_class_port_info(const ClassPortInfo& c) {
  auto wide = [](const char* field, uint64_t v, int bits) -> std::optional<Error> {
    if (v >> bits)
      return make_error(ErrorCode::kInvalidArgument,
                        fmt::format("{} = {} does not fit in {} bits", field, v, bits));
    return std::nullopt;
  };
  for (auto e :
       {wide("CapabilityMask2", c.capability_mask2, 27),
        wide("RespTimeValue", c.resp_time_value, 5), wide("RedirectSL", c.redirect_sl, 4),
        wide("RedirectFL", c.redirect_fl, 20), wide("RedirectQP", c.redirect_qp, 24),
        wide("TrapSL", c.trap_sl, 4), wide("TrapFL", c.trap_fl, 20), wide("TrapQP", c.trap_qp, 24)})
    if (e) return *e;
  std::vector<uint8_t> out(kClassPortInfoSize, 0);
  uint8_t* p = out.data();
  p[0] = c.base_version;
  p[1] = c.class_version;
  put16(p + 2, c.capability_mask);
  put32(p + 4, c.capability_mask2 << 5 | c.resp_time_value);
  std::copy(c.redirect_gid.begin(), c.redirect_gid.end(), p + 8);
  put32(p + 24, uint32_t{c.redirect_tc} << 24 | uint32_t{c.redirect_sl} << 20 | c.redirect_fl);
  put16(p + 28, c.redirect_lid);
  put16(p + 30, c.redirect_pkey);
  put32(p + 32, c.redirect_qp);
  put32(p + 36, c.redirect_qkey);
  std::copy(c.trap_gid.begin(), c.trap_gid.end(), p + 40);
  put32(p + 56, uint32_t{c.trap_tc} << 24 | uint32_t{c.trap_sl} << 20 | c.trap_fl);
  put16(p + 60, c.trap_lid);
  put16(p + 62, c.trap_pkey);
  put32(p + 64, uint32_t{c.trap_hl} << 24 | c.trap_qp);
  put32(p + 68, c.trap_qkey);
  return out;
}

Result<ClassPortInfo> decode_class_port_info(std::span<const uint8_t> bytes) {
  if (bytes.size() < kClassPortInfoSize)
    return make_error(ErrorCode::kTruncated, fmt::format("ClassPortInfo of {} bytes (needs {})",
                                                         bytes.size(), kClassPortInfoSize));
  const uint8_t* p = bytes.data();
  ClassPortInfo c;
  c.base_version = p[0];
  c.class_version = p[1];
  c.capability_mask = get16(p + 2);
  uint32_t w = get32(p + 4);
  c.capability_mask2 = w >> 5;
  c.resp_time_value = w & 0x1F;
  std::copy(p + 8, p + 24, c.redirect_gid.begin());
  w = get32(p + 24);
  c.redirect_tc = static_cast<uint8_t>(w >> 24);
  c.redirect_sl = (w >> 20) & 0xF;
  c.redirect_fl = w & 0xFFFFF;
  c.redirect_lid = get16(p + 28);
  c.redirect_pkey = get16(p + 30);
  c.redirect_qp = get32(p + 32) & 0xFFFFFF;
  c.redirect_qkey = get32(p + 36);
  std::copy(p + 40, p + 56, c.trap_gid.begin());
  w = get32(p + 56);
  c.trap_tc = static_cast<uint8_t>(w >> 24);
  c.trap_sl = (w >> 20) & 0xF;
  c.trap_fl = w & 0xFFFFF;
  c.trap_lid = get16(p + 60);
  c.trap_pkey = get16(p + 62);
  w = get32(p + 64);
  c.trap_hl = static_cast<uint8_t>(w >> 24);
  c.trap_qp = w & 0xFFFFFF;
  c.trap_qkey = get32(p + 68);
  return c;
}

}  // namespace rdmaqos::sa
