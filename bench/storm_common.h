// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What both job-start storm benches share: the fabric they run on, and how they read the one
// JSON line a storm program prints.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <sstream>
#include <string>

#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::bench {

// A fat tree of `nodes` compute CAs, 32 per leaf and 4 spines, given up to 15 minutes to come up
// (1,980 CAs take several).
inline testbed::IbFabricOptions storm_fat_tree(int nodes) {
  testbed::FatTreeSpec spec;
  spec.cas = nodes;
  spec.cas_per_leaf = 32;
  spec.spines = 4;
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.start_timeout = std::chrono::seconds(900);
  return o;
}

// The first line of `output` that is a JSON object (a storm program's result line); null when
// there is none.
inline nlohmann::json json_line(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') return nlohmann::json::parse(line, nullptr, false);
  return nlohmann::json();
}

}  // namespace rdmaqos::bench
