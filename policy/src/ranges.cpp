// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Membership test of a merged range list (binary search).
#include <algorithm>

#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

bool ranges_contain(const RangeList& ranges, uint64_t value) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), value,
                             [](uint64_t v, const Range& r) { return v < r.low; });
  return it != ranges.begin() && std::prev(it)->high >= value;
}

}  // namespace rdmaqos::policy
