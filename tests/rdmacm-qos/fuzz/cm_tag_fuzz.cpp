// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: the passive side's module reads the connection tag from the private data
// of every RoCE connection request, bytes a remote peer chose. Input: 2 bytes service port,
// 2 bytes source port, then the private data. No input may crash it; a tag it takes is the one
// encoding of what it returns and is zeroed; anything else leaves the data as it came.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdma-qos/rdmacm-qos/cm_tag.h"

using namespace rdmaqos::rdmacm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const auto dport = static_cast<uint16_t>(data[0] << 8 | data[1]);
  const auto sport = static_cast<uint16_t>(data[2] << 8 | data[3]);
  std::vector<uint8_t> pd(data + 4, data + size);
  const std::vector<uint8_t> before = pd;
  auto tag = take_cm_tag(pd.data(), pd.size(), dport, sport);
  if (!tag) {
    if (pd != before) abort();
    return 0;
  }
  const size_t at = pd.size() - kCmTagSize;
  auto again = encode_cm_tag(*tag, dport, sport);
  if (std::memcmp(again.data(), before.data() + at, kCmTagSize) != 0) abort();
  for (size_t i = 0; i < pd.size(); ++i)
    if (pd[i] != (i < at ? before[i] : 0)) abort();
  if (tag->qos_class && *tag->qos_class > 0xFFF) abort();
  if (tag->level_hash && *tag->level_hash > 0xFFFFFF) abort();
  return 0;
}
