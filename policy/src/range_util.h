// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Range-list helpers shared by the parser and the compiler (sorted, merged, inclusive ranges).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

// Sorts and merges overlapping or adjacent ranges, as OpenSM's __sort_reduce_rangearr does.
inline RangeList merge_ranges(RangeList ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.low < b.low; });
  RangeList out;
  for (const auto& r : ranges) {
    if (!out.empty() && (out.back().high == UINT64_MAX || r.low <= out.back().high + 1))
      out.back().high = std::max(out.back().high, r.high);
    else
      out.push_back(r);
  }
  return out;
}

// True when every value of `inner` is in `outer` (both merged).
inline bool ranges_cover(const RangeList& outer, const RangeList& inner) {
  return std::all_of(inner.begin(), inner.end(), [&](const Range& r) {
    auto it = std::upper_bound(outer.begin(), outer.end(), r.low,
                               [](uint64_t v, const Range& o) { return v < o.low; });
    if (it == outer.begin()) return false;
    --it;
    return it->low <= r.low && r.high <= it->high;
  });
}

inline std::string format_range(const Range& r) {
  return r.low == r.high ? fmt::format("0x{:x}", r.low)
                         : fmt::format("0x{:x}-0x{:x}", r.low, r.high);
}

// Values of wide fields (pkeys, GUIDs, Service-IDs) in hex, small ones in decimal.
inline std::string format_number(uint64_t v, uint64_t field_max) {
  return field_max >= 0xFFFF ? fmt::format("0x{:x}", v) : fmt::format("{}", v);
}

}  // namespace rdmaqos::policy
