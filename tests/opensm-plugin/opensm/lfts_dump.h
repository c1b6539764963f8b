// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// LFT dumps for OpenSM's `file` routing engine: the file OpenSM writes from its own routing, and
// a copy of it with routes taken out, so a path can be one-way or missing.
#pragma once

#include <cstdint>
#include <string>

#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::osmp {

// Runs OpenSM once on `options` under routing engine `engine` with OSM_LOG_ROUTING on, which
// makes it write opensm-lfts.dump (every switch's LFT, in the format `ibroute` prints and the
// `file` engine reads) at SUBNET UP; returns that file's text. Throws when `engine` did not route
// (OpenSM fell back to another) or OpenSM wrote no dump.
std::string dump_lfts(testbed::IbFabricOptions options, const std::string& engine);

// `dump` without the entries for LIDs [lid, lid + count) on every switch but `keep_switch_guid`:
// the `file` engine leaves an entry it is not given unrouted, so those LIDs are reached only
// from that switch.
std::string without_routes_to(const std::string& dump, uint64_t keep_switch_guid, uint16_t lid,
                              int count);

}  // namespace rdmaqos::osmp
