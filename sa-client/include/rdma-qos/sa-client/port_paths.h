// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a host asks of the SA for one port, whoever carries the question: the port's own SA
// clients (SharedClient, over umad) or the node's path service (LocalPathClient, over a local
// socket to rdma-qos-lsd, which asks the SA once for every process of the node). The preload
// module's route and plain-verbs code only sees this interface.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa {

// nullopt: no bound (the carrier's own timeouts and retries only).
using Deadline = std::optional<std::chrono::steady_clock::time_point>;
// A deadline `budget` from now; none for a zero or negative budget.
Deadline deadline_after(std::chrono::milliseconds budget);

class PortPaths {
 public:
  virtual ~PortPaths() = default;

  // The SA's ClassPortInfo capabilities: QoS (the QoS-Class may be queried) and MultiPathRecord.
  virtual Result<bool> qos_supported(Deadline deadline) = 0;
  virtual Result<bool> multipath_supported(Deadline deadline) = 0;
  virtual Result<std::vector<PathRecord>> path_records(const PathQuery& query,
                                                       Deadline deadline) = 0;
  // The PathRecord query's requirements sent as a MultiPathRecord (multipath_query_from).
  virtual Result<std::vector<PathRecord>> multipath_records(const PathQuery& query,
                                                            Deadline deadline) = 0;
};

}  // namespace rdmaqos::sa
