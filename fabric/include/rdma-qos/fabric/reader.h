// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading every port's QoS tables over SMPs from a local port: the topology and PortInfo with
// libibnetdisc, then the SL2VL and VLArb tables LID-routed, many in flight at once. Read-only:
// works beside any SM (it needs the LIDs an SM assigned).
#pragma once

#include <functional>
#include <string>

#include "rdma-qos/common/result.h"
#include "rdma-qos/fabric/tables.h"

struct ibmad_port;

namespace rdmaqos::fabric {

struct ReadOptions {
  std::string ca;      // empty: the first CA
  int port = 0;        // 0: the first active port
  int timeout_ms = 0;  // per SMP; 0: 1000
  int attempts = 3;    // sends of one SMP before its table counts as unread
  size_t window = 16;  // SMPs in flight
  // Read P_Key tables too (pkey port groups need them): every end port's, and a switch's
  // port 0's only (a switch's membership; its external ports hold P_Keys only when they
  // enforce partitions, and the SA's groups do not count them).
  bool pkeys = false;
  std::function<void(const std::string&)> progress;  // the library never prints
};

// The SMP port for (ca, port), opened once per process (umad2sim crashes a process that opens
// and closes several); null when it cannot be opened.
ibmad_port* smp_port(const std::string& ca, int port);

// Every node's ports with their tables; tables that did not answer are listed in `unread`. An
// error when the topology cannot be read at all.
Result<FabricTables> read_fabric(const ReadOptions& options);

// Reads the tables of `fabric` again (after read_fabric, from the same process): PortInfo too
// when `refresh_port_info`, then every table; failures are appended to `unread`. No topology
// walk, so it reuses the open port only (umad2sim's limit above).
void read_tables(FabricTables& fabric, const ReadOptions& options, bool refresh_port_info);

}  // namespace rdmaqos::fabric
