// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MultiPathRecord (SA attribute 0x003A, sent with GetMulti, RMPP-active): path requirements
// plus SGID and DGID lists. Pure codecs, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa {

constexpr size_t kMultiPathRecordFixedSize = 24;  // GIDs follow at byte 24

namespace mpr_mask {
constexpr uint64_t kRawTraffic = 1ULL << 0;
constexpr uint64_t kFlowLabel = 1ULL << 2;
constexpr uint64_t kHopLimit = 1ULL << 3;
constexpr uint64_t kTClass = 1ULL << 4;
constexpr uint64_t kReversible = 1ULL << 5;
constexpr uint64_t kNumbPath = 1ULL << 6;
constexpr uint64_t kPKey = 1ULL << 7;
constexpr uint64_t kQosClass = 1ULL << 8;
constexpr uint64_t kSl = 1ULL << 9;
constexpr uint64_t kMtuSelector = 1ULL << 10;
constexpr uint64_t kMtu = 1ULL << 11;
constexpr uint64_t kRateSelector = 1ULL << 12;
constexpr uint64_t kRate = 1ULL << 13;
constexpr uint64_t kPacketLifeSelector = 1ULL << 14;
constexpr uint64_t kPacketLife = 1ULL << 15;
constexpr uint64_t kServiceIdMsb = 1ULL << 16;
constexpr uint64_t kIndependenceSelector = 1ULL << 17;
constexpr uint64_t kSgidCount = 1ULL << 19;
constexpr uint64_t kDgidCount = 1ULL << 20;
constexpr uint64_t kServiceIdLsb = 1ULL << 21;
constexpr uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
}  // namespace mpr_mask

struct MultiPathRecord {
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
  uint8_t mtu = 0;
  Selector rate_selector = Selector::kGreaterThan;
  uint8_t rate = 0;
  Selector packet_life_selector = Selector::kGreaterThan;
  uint8_t packet_life = 0;
  uint64_t service_id = 0;  // split on the wire: bits 63:56 at byte 13, 55:0 at byte 17
  uint8_t independence_selector = 0;
  std::vector<Gid> sgids;  // SGIDCount = size
  std::vector<Gid> dgids;  // DGIDCount = size

  bool operator==(const MultiPathRecord&) const = default;
};

// 24 bytes plus 16 per GID. More than 255 GIDs in a list, or an over-wide field, is an error.
Result<std::vector<uint8_t>> encode_multipath_record(const MultiPathRecord& record);
// Rejects input shorter than 24 bytes or than the GID lists its counts announce.
Result<MultiPathRecord> decode_multipath_record(std::span<const uint8_t> bytes);

}  // namespace rdmaqos::sa
