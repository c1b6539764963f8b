// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// path-bits of qos-levels: which LIDs of a destination's range a level's paths may use.
#include "rdma-qos/sa-responder/path_bits.h"

#include <fmt/format.h>

#include <algorithm>

namespace rdmaqos::sad {

LidOffsets allowed_dlid_offsets(const policy::RangeList* path_bits, uint8_t lmc) {
  LidOffsets all;
  const uint64_t lids = uint64_t{1} << std::min<uint8_t>(lmc, 7);
  for (uint64_t o = 0; o < lids; ++o) all.set(o);
  if (path_bits == nullptr) return all;
  LidOffsets out;
  for (const policy::Range& r : *path_bits) {
    for (uint64_t v = r.low; v <= r.high && v < lids; ++v) out.set(v);
  }
  return out.none() ? all : out;
}

rdmaqos::Diagnostics path_bits_warnings(const policy::CompiledPolicy& policy,
                                        const FabricModel& fabric) {
  rdmaqos::Diagnostics out;
  const uint8_t lmc = fabric.subnet_lmc();
  const uint64_t lids = uint64_t{1} << lmc;
  for (const policy::QosLevel& l : policy.policy().levels) {
    std::string beyond;
    for (const policy::Range& r : l.path_bits) {
      if (r.high < lids) continue;
      const uint64_t low = std::max(r.low, lids);
      if (!beyond.empty()) beyond += ",";
      beyond += low == r.high ? fmt::format("{}", low) : fmt::format("{}-{}", low, r.high);
    }
    if (beyond.empty()) continue;
    out.push_back(
        {rdmaqos::Severity::kWarning, l.location,
         fmt::format("qos-level '{}': path-bits {} ignored: the subnet's LMC is {} "
                     "(a port has LIDs base+0..base+{})",
                     l.name, beyond, lmc, lids - 1),
         lmc == 0 ? "path-bits choose among a port's LIDs only with OpenSM's lmc > 0" : ""});
  }
  return out;
}

}  // namespace rdmaqos::sad
