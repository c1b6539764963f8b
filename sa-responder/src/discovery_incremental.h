// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The incremental re-discovery over any SMP transport (the port, or a simulated fabric in the
// unit tests). Internal to rdma-qos-sad's discovery library; rediscover_fabric (discovery.h)
// runs it on the port.
//
// It checks the whole fabric with directed-route SMPs, wave after wave from the local port as
// libibnetdisc walks it: every node's NodeInfo through every physically linked switch port (a
// replaced node, a moved cable), every switch's SwitchInfo, PortInfo of each port and every LFT
// block (OpenSM re-routes after a link change, so forwarding tables may change anywhere), each
// CA port's PortInfo. Nodes the model knows are asked for all of that in the same wave that
// reaches them; a node it does not know (or that answers otherwise) is read in full once its
// NodeInfo is in, and the walk goes on through it. The PKey and SL2VL tables are then taken over
// from the previous model wherever their ports are unchanged (take_over_tables) and read only
// where not. The scan is assembled as the full discovery's is, so the model is the one a full
// discovery would give.
#pragma once

#include <functional>
#include <string>

#include "discovery_scan.h"
#include "rdma-qos/sa-responder/discovery.h"
#include "smp_window.h"

namespace rdmaqos::sad {

struct IncrementalLimits {
  // More tables than this share of the model's to read again: a full discovery instead (a new
  // SM or a re-configured subnet changes nearly everything; the full discovery is the
  // reference then).
  double max_reread_share = 0.5;
};

IncrementalOutcome incremental_discovery(SmpTransport& smp, const Discovery& previous,
                                         const IncrementalLimits& limits,
                                         const std::function<void(const std::string&)>& progress);

}  // namespace rdmaqos::sad
