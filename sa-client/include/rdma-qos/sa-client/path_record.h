// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PathRecord (SA attribute 0x0035, 64 bytes; same layout as struct ibv_path_record) and its
// component mask bits. Pure codecs, no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/gid.h"

namespace rdmaqos::sa {

constexpr size_t kPathRecordSize = 64;

// PathRecord component mask bits (IBA 15.2.5.16).
namespace pr_mask {
constexpr uint64_t kServiceIdMsb = 1ULL << 0;
constexpr uint64_t kServiceIdLsb = 1ULL << 1;
// OpenSM answers INSUF_COMPS when only one half is set: always use both.
constexpr uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
constexpr uint64_t kDgid = 1ULL << 2;
constexpr uint64_t kSgid = 1ULL << 3;
constexpr uint64_t kDlid = 1ULL << 4;
constexpr uint64_t kSlid = 1ULL << 5;
constexpr uint64_t kRawTraffic = 1ULL << 6;
constexpr uint64_t kFlowLabel = 1ULL << 8;
constexpr uint64_t kHopLimit = 1ULL << 9;
constexpr uint64_t kTClass = 1ULL << 10;
constexpr uint64_t kReversible = 1ULL << 11;
constexpr uint64_t kNumbPath = 1ULL << 12;
constexpr uint64_t kPKey = 1ULL << 13;
constexpr uint64_t kQosClass = 1ULL << 14;
constexpr uint64_t kSl = 1ULL << 15;
constexpr uint64_t kMtuSelector = 1ULL << 16;
constexpr uint64_t kMtu = 1ULL << 17;
constexpr uint64_t kRateSelector = 1ULL << 18;
constexpr uint64_t kRate = 1ULL << 19;
constexpr uint64_t kPacketLifeSelector = 1ULL << 20;
constexpr uint64_t kPacketLife = 1ULL << 21;
constexpr uint64_t kPreference = 1ULL << 22;
constexpr uint64_t kAll = (1ULL << 23) - 1 - (1ULL << 7);
}  // namespace pr_mask

// Selector of MTU, rate and packet lifetime (bits 7:6 of their bytes).
enum class Selector : uint8_t { kGreaterThan = 0, kLessThan = 1, kExactly = 2, kBest = 3 };

struct PathRecord {
  uint64_t service_id = 0;
  Gid dgid{};
  Gid sgid{};
  uint16_t dlid = 0;
  uint16_t slid = 0;
  bool raw_traffic = false;
  uint32_t flow_label = 0;  // 20 bits
  uint8_t hop_limit = 0;
  uint8_t tclass = 0;
  bool reversible = false;
  uint8_t numb_path = 0;  // 7 bits
  uint16_t pkey = 0;
  uint16_t qos_class = 0;  // 12 bits
  uint8_t sl = 0;          // 4 bits
  Selector mtu_selector = Selector::kGreaterThan;
  uint8_t mtu = 0;  // 6 bits
  Selector rate_selector = Selector::kGreaterThan;
  uint8_t rate = 0;  // 6 bits
  Selector packet_life_selector = Selector::kGreaterThan;
  uint8_t packet_life = 0;  // 6 bits
  uint8_t preference = 0;

  bool operator==(const PathRecord&) const = default;
};

// Encodes a record; fields wider than their bit width are an error (kInvalidArgument), not
// silently truncated.
Result<std::array<uint8_t, kPathRecordSize>> encode_path_record(const PathRecord& record);
// Decodes the first 64 bytes; fewer is kTruncated. Reserved bits are ignored.
Result<PathRecord> decode_path_record(std::span<const uint8_t> bytes);

}  // namespace rdmaqos::sa
