// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand route sequence of rdma_resolve_route: ask the SA (its QoS and MultiPathRecord
// support, then the path), install the answer on the id, and for a synchronous id take the
// event the kernel queued. What it needs from the module, the SA it asks and the id it installs
// on, is one named interface: the module implements it over the port's sa::SharedClient and
// librdmacm (ib_route_sa.cpp), tests over a fake SA and librdmacm.
#pragma once

#include <infiniband/sa.h>

#include <optional>

#include "rdma-qos/common/result.h"
#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::preload {

// The SA and the id one resolution runs against.
class IbRouteHost {
 public:
  virtual ~IbRouteHost() = default;
  // Whether the SA advertises QoS (an error: it cannot be asked).
  virtual rdmaqos::Result<bool> sa_qos_supported() = 0;
  virtual rdmacm::PathAnswer path_records(const sa::PathQuery& query) = 0;
  // MultiPathRecord (used when asked for): whether the SA advertises it, and the same query
  // sent as a MultiPathRecord (the answers are PathRecords, as above).
  virtual rdmaqos::Result<bool> sa_mpr_supported() = 0;
  virtual rdmacm::PathAnswer multipath_records(const sa::PathQuery& query) = 0;
  // rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &path, sizeof path): 0 or -1.
  // `answer` is the record `path` was encoded from.
  virtual int set_path(ibv_path_data& path, const sa::PathRecord& answer) = 0;
  // Synchronous ids: take the ROUTE_RESOLVED event the kernel queued (0, or -1).
  virtual int consume_route_resolved() = 0;
};

struct IbRouteResult {
  // The record installed on the id, or why none was: the id is then untouched and the caller
  // calls the real rdma_resolve_route.
  rdmaqos::Result<sa::PathRecord> installed;
  bool multipath = false;  // the installed path came from a MultiPathRecord query
  // MultiPathRecord asked for but not used, and why (PathRecord was asked instead).
  std::optional<rdmaqos::Error> multipath_unused;
  // A synchronous id whose path is installed but whose queued ROUTE_RESOLVED event could not
  // be consumed.
  std::optional<rdmaqos::Error> event_unconsumed;
};

// Query, install, and for synchronous ids consume the queued event. Any failure before the
// path is installed leaves the id untouched, so the caller falls back to rdma_resolve_route.
// With `multipath`, the query is a MultiPathRecord when the SA advertises it (the first answer,
// the primary path, is installed); otherwise, or when it fails, a PathRecord.
IbRouteResult resolve_ib_route(const rdmacm::IbRouteInputs& in, bool synchronous_id,
                               IbRouteHost& host, bool multipath = false);

}  // namespace rdmaqos::preload
