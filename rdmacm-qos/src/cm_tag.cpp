// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The connection tag's encoding (see cm_tag.h; the layout is in Documentation/architecture.md).
//   0..3   magic "rQoS"
//   4      version (1)
//   5      flags: bit 0 QoS-Class, bit 1 traffic class, bit 2 level; other bits 0
//   6..7   QoS-Class, big endian, 0..0xfff (0 when absent)
//   8      traffic class (0 when absent)
//   9..11  level hash, big endian (0 when absent)
//   12..15 check word: FNV-1a over bytes 0..11, the service port and the active side's source
//          port (both big endian), big endian
#include "rdma-qos/rdmacm-qos/cm_tag.h"

#include <cstring>

namespace rdmaqos::rdmacm {
namespace {

constexpr uint8_t kMagic[4] = {'r', 'Q', 'o', 'S'};
constexpr uint8_t kHasClass = 1;
constexpr uint8_t kHasTclass = 2;
constexpr uint8_t kHasLevel = 4;
constexpr uint32_t kFnvOffset = 2166136261u;
constexpr uint32_t kFnvPrime = 16777619u;

uint32_t fnv1a(uint32_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

uint32_t check_word(const uint8_t* head, uint16_t dport, uint16_t sport) {
  const uint8_t ports[4] = {static_cast<uint8_t>(dport >> 8), static_cast<uint8_t>(dport),
                            static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport)};
  return fnv1a(fnv1a(kFnvOffset, head, 12), ports, sizeof ports);
}

}  // namespace

uint32_t cm_tag_level_hash(std::string_view level_name) {
  uint32_t h =
      fnv1a(kFnvOffset, reinterpret_cast<const uint8_t*>(level_name.data()), level_name.size());
  return (h ^ (h >> 24)) & 0xFFFFFF;  // xor-folded to 24 bits
}

std::array<uint8_t, kCmTagSize> encode_cm_tag(const CmTag& tag, uint16_t dport, uint16_t sport) {
  std::array<uint8_t, kCmTagSize> b{};
  std::memcpy(b.data(), kMagic, sizeof kMagic);
  b[4] = kCmTagVersion;
  uint8_t flags = 0;
  if (tag.qos_class) {
    flags |= kHasClass;
    const uint16_t c = *tag.qos_class & 0xFFF;
    b[6] = static_cast<uint8_t>(c >> 8);
    b[7] = static_cast<uint8_t>(c);
  }
  if (tag.tclass) {
    flags |= kHasTclass;
    b[8] = *tag.tclass;
  }
  if (tag.level_hash) {
    flags |= kHasLevel;
    const uint32_t h = *tag.level_hash & 0xFFFFFF;
    b[9] = static_cast<uint8_t>(h >> 16);
    b[10] = static_cast<uint8_t>(h >> 8);
    b[11] = static_cast<uint8_t>(h);
  }
  b[5] = flags;
  const uint32_t check = check_word(b.data(), dport, sport);
  b[12] = static_cast<uint8_t>(check >> 24);
  b[13] = static_cast<uint8_t>(check >> 16);
  b[14] = static_cast<uint8_t>(check >> 8);
  b[15] = static_cast<uint8_t>(check);
  return b;
}

std::optional<CmTag> decode_cm_tag(const uint8_t* b, uint16_t dport, uint16_t sport) {
  if (b == nullptr || std::memcmp(b, kMagic, sizeof kMagic) != 0 || b[4] != kCmTagVersion)
    return std::nullopt;
  const uint8_t flags = b[5];
  if ((flags & ~(kHasClass | kHasTclass | kHasLevel)) != 0) return std::nullopt;
  const uint16_t qos_class = static_cast<uint16_t>(b[6] << 8 | b[7]);
  const uint32_t level = static_cast<uint32_t>(b[9]) << 16 | static_cast<uint32_t>(b[10]) << 8 |
                         static_cast<uint32_t>(b[11]);
  // One encoding per tag: what is absent is zero, the class fits 12 bits.
  if (qos_class > 0xFFF || (!(flags & kHasClass) && qos_class != 0) ||
      (!(flags & kHasTclass) && b[8] != 0) || (!(flags & kHasLevel) && level != 0))
    return std::nullopt;
  const uint32_t check = static_cast<uint32_t>(b[12]) << 24 | static_cast<uint32_t>(b[13]) << 16 |
                         static_cast<uint32_t>(b[14]) << 8 | static_cast<uint32_t>(b[15]);
  if (check != check_word(b, dport, sport)) return std::nullopt;
  CmTag tag;
  if (flags & kHasClass) tag.qos_class = qos_class;
  if (flags & kHasTclass) tag.tclass = b[8];
  if (flags & kHasLevel) tag.level_hash = level;
  return tag;
}

bool add_cm_tag(const void* data, size_t len, const CmTag& tag, uint16_t dport, uint16_t sport,
                std::array<uint8_t, kCmReqPrivateDataSize>& out) {
  if (data == nullptr) len = 0;
  if (len > kCmReqPrivateDataSize - kCmTagSize) return false;
  out.fill(0);
  if (len > 0) std::memcpy(out.data(), data, len);
  const auto bytes = encode_cm_tag(tag, dport, sport);
  std::memcpy(out.data() + kCmReqPrivateDataSize - kCmTagSize, bytes.data(), bytes.size());
  return true;
}

std::optional<CmTag> take_cm_tag(uint8_t* data, size_t len, uint16_t dport, uint16_t sport) {
  if (data == nullptr || len < kCmTagSize) return std::nullopt;
  uint8_t* at = data + len - kCmTagSize;
  auto tag = decode_cm_tag(at, dport, sport);
  if (tag) std::memset(at, 0, kCmTagSize);
  return tag;
}

}  // namespace rdmaqos::rdmacm
