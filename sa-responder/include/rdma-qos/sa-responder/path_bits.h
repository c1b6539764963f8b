// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A qos-level's path-bits (the RFC's field that OpenSM parses and never uses): with LMC > 0 they
// choose which LIDs of a destination port's range a level's paths go to, and so which route the
// switches' forwarding tables give them.
#pragma once

#include <bitset>
#include <cstdint>

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

// Bit n set: DLID base + n may be answered. At most 2^7 LIDs per port (LMC 7).
using LidOffsets = std::bitset<128>;

// The path-bits of a matched level, as the compiled level carries them; null for a level
// without any (qos-ulps' simple levels among them).
inline const policy::RangeList* level_path_bits(const policy::Level& level) {
  return level.path_bits.empty() ? nullptr : &level.path_bits;
}

// The destination LID offsets `path_bits` allow at a port with `lmc`: the values below 2^lmc.
// All offsets when no value fits (no path-bits, or only values beyond the LMC): OpenSM's
// choice of LIDs then stands.
LidOffsets allowed_dlid_offsets(const policy::RangeList* path_bits, uint8_t lmc);

// One warning per qos-level whose path-bits name values no port of `fabric` has (at or beyond
// 2^LMC, the subnet's largest LMC), at the level's location: those values are ignored.
rdmaqos::Diagnostics path_bits_warnings(const policy::CompiledPolicy& policy,
                                        const FabricModel& fabric);

}  // namespace rdmaqos::sad
