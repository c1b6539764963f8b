// Fabric discovery with SMPs from a local port: topology with libibnetdisc, then each port's
// PKey and SL2VL tables and each switch's linear forwarding table with libibmad queries.
#pragma once

#include <string>
#include <vector>

#include "rdma-qos/sa-client/result.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

struct DiscoveryOptions {
  std::string ca;      // empty: the first CA
  int port = 0;        // 0: the first active port
  int timeout_ms = 0;  // per SMP; 0: libibmad's default
  int retries = 0;
};

struct Discovery {
  FabricModel model;  // indexed; sm_port_guid is the port discovery ran from
  Endpoint self;
  // Tables a node did not return (the model keeps zeros there: no SL dropped, no PKey).
  std::vector<std::string> warnings;
};

// The whole fabric, or an error: a discovery that fails half-way returns no model, so the
// caller keeps the one it had.
sa::Result<Discovery> discover_fabric(const DiscoveryOptions& options);

}  // namespace rdmaqos::sad
