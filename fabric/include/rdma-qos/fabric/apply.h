// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// One-shot programming of the intended tables over SMP Set, for fabrics whose SM does not run
// rdma-qos's OpenSM plugin. Writes only what differs from what was read, as OpenSM does; the
// caller reads back and checks. An SM that programs QoS on its sweeps may write its own tables
// again: see fabric-qos.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rdma-qos/fabric/intended.h"
#include "rdma-qos/fabric/reader.h"

namespace rdmaqos::fabric {

struct SmpSet {
  uint16_t lid = 0;
  uint16_t attr = 0;
  uint32_t mod = 0;
  std::array<uint8_t, kSmpDataSize> data{};
  std::string what;  // "node port N sl2vl 3->1", for progress and errors
};

// The Sets that turn `current` into what `planner` intends (pure: no I/O).
std::vector<SmpSet> plan_sets(const FabricTables& current, const Planner& planner);

struct ApplyResult {
  size_t written = 0;
  std::vector<std::string> failed;  // Sets no node acknowledged
};

// Sends `sets` from the port of `options`, one at a time (a Set is sent again on timeout up to
// options.attempts times).
ApplyResult send_sets(const std::vector<SmpSet>& sets, const ReadOptions& options);

}  // namespace rdmaqos::fabric
