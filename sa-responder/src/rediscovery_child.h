// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's re-discovery child: this program run again with --dump-fabric, started with
// the model in force for an incremental re-discovery, and the discovery it printed read back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {

// A re-discovery in a child process (this program with --dump-fabric): while the SA port is
// open, SMP answers do not reach an in-process discovery under umad2sim. Its output is read as
// it comes, so the SA keeps answering meanwhile.
struct ChildDiscovery {
  pid_t pid = -1;
  int fd = -1;
  std::string output;
  // The start, then each output: the time limit counts from it.
  std::chrono::steady_clock::time_point last_output;
  bool full = true;  // a full discovery (else incremental, --previous)
};

// `previous`: the JSON line of the model in force, for an incremental re-discovery (given on
// the child's standard input, a memfd); null for a full one. nullopt when it cannot be started.
std::optional<ChildDiscovery> spawn_discovery(const DiscoveryOptions& options,
                                              const std::string* previous);

// Reaps a child whose output is complete (or that was killed): the discovery it printed, and its
// JSON line in `json`; nullopt when it failed or printed no model. Its progress lines
// ("discovery: ...": how far it got, and why an incremental one fell back to a full one) go to
// the log.
std::optional<Discovery> child_result(ChildDiscovery& child, std::string* json = nullptr);

}  // namespace rdmaqos::sad
