// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric discovery with SMPs from a local port: topology with libibnetdisc, then each port's
// PKey and SL2VL tables and each switch's linear forwarding table with libibmad queries (the
// switches' SL2VL tables several in flight at once over libibumad).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/sa-client/result.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

struct DiscoveryOptions {
  std::string ca;      // empty: the first CA
  int port = 0;        // 0: the first active port
  int timeout_ms = 0;  // per SMP; 0: libibmad's default
  int retries = 0;     // libibmad's resends of one SMP
  // Whole attempts of one table read (each with libibmad's resends) before the table counts
  // as missing: one lost answer costs a retry of that block, not the discovery.
  int attempts = 3;
  // Told what the discovery has done so far (topology, then every tenth of the nodes' tables);
  // a library never prints, the caller logs.
  std::function<void(const std::string&)> progress;
};

struct Discovery {
  FabricModel model;  // indexed; sm_port_guid is the port discovery ran from
  Endpoint self;
  // Tables a node did not return (PKey, SL2VL). The model keeps nothing there (no PKey, no
  // SL dropped), so it is incomplete: answers from it could grant a path a partition forbids
  // or an SL the fabric drops.
  std::vector<std::string> missing;
  // What the model holds but an administrator should hear of (a link speed IBA does not
  // define); the model is complete.
  std::vector<std::string> warnings;
};

// Why `found` must not replace a model in force (a re-discovery that missed tables gives a
// degraded model); nullopt when it may.
std::optional<std::string> replacement_refused(const Discovery& found);

// The whole fabric, or an error: a discovery whose topology or forwarding tables fail half-way
// returns no model; one that misses PKey or SL2VL tables lists them in `missing`.
sa::Result<Discovery> discover_fabric(const DiscoveryOptions& options);

}  // namespace rdmaqos::sad
