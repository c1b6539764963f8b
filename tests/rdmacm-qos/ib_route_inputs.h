// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand route inputs the route tests share: rdmacm-qos's (the query, the decision) and
// the preload module's (the sequence that asks and installs), which depends on rdmacm-qos.
#pragma once

#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/gid.h"

namespace rdmaqos::rdmacm::testing {

// Port 1 of CA ...0001 to CA ...0002 on the default subnet, the full default P_Key, iSER's
// Service-ID (3260 in the TCP port space), QoS-Class 0x20.
inline IbRouteInputs ib_route_inputs() {
  IbRouteInputs in;
  in.sgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300000001ULL);
  in.dgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300000002ULL);
  in.service_id = 0x0000000001060CBCULL;  // iSER 3260 in the TCP port space
  in.qos_class = 0x20;
  return in;
}

}  // namespace rdmaqos::rdmacm::testing
