// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SA ClassPortInfo (attribute 0x0001, 72 bytes): capability masks (QoS, MultiPath) and the
// response time the client derives its timeout from. Pure codecs, no I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/gid.h"

namespace rdmaqos::sa {

constexpr size_t kClassPortInfoSize = 72;

// CapabilityMask bits of the SA class (IBA 15.2.1.1) that the client reads or tests name.
namespace cap {
constexpr uint16_t kTrapSupported = 1u << 0;
constexpr uint16_t kNoticeSupported = 1u << 1;
constexpr uint16_t kMultiPathSupported = 1u << 10;
constexpr uint16_t kReinitSupported = 1u << 11;
}  // namespace cap
namespace cap2 {
constexpr uint32_t kQosSupported = 1u << 1;  // OpenSM sets it only with QoS enabled (-Q)
}  // namespace cap2

struct ClassPortInfo {
  uint8_t base_version = 0;
  uint8_t class_version = 0;
  uint16_t capability_mask = 0;
  uint32_t capability_mask2 = 0;  // 27 bits
  uint8_t resp_time_value = 0;    // 5 bits: 4.096 us * 2^value
  Gid redirect_gid{};
  uint8_t redirect_tc = 0;
  uint8_t redirect_sl = 0;
  uint32_t redirect_fl = 0;
  uint16_t redirect_lid = 0;
  uint16_t redirect_pkey = 0;
  uint32_t redirect_qp = 0;
  uint32_t redirect_qkey = 0;
  Gid trap_gid{};
  uint8_t trap_tc = 0;
  uint8_t trap_sl = 0;
  uint32_t trap_fl = 0;
  uint16_t trap_lid = 0;
  uint16_t trap_pkey = 0;
  uint8_t trap_hl = 0;
  uint32_t trap_qp = 0;
  uint32_t trap_qkey = 0;

  bool qos_supported() const { return (capability_mask2 & cap2::kQosSupported) != 0; }
  bool multipath_supported() const { return (capability_mask & cap::kMultiPathSupported) != 0; }
  // 4.096 us * 2^RespTimeValue, in nanoseconds.
  std::chrono::nanoseconds resp_time() const;

  bool operator==(const ClassPortInfo&) const = default;
};

Result<std::vector<uint8_t>> encode_class_port_info(const ClassPortInfo& info);
Result<ClassPortInfo> decode_class_port_info(std::span<const uint8_t> bytes);

}  // namespace rdmaqos::sa
