// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric both job-start storm benches run on: a fat tree of `nodes` compute CAs, 32 per
// leaf and 4 spines, given up to 15 minutes to come up (1,980 CAs take several).
#pragma once

#include <chrono>

#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::bench {

inline testbed::IbFabricOptions storm_fat_tree(int nodes) {
  testbed::FatTreeSpec spec;
  spec.cas = nodes;
  spec.cas_per_leaf = 32;
  spec.spines = 4;
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.start_timeout = std::chrono::seconds(900);
  return o;
}

}  // namespace rdmaqos::bench
