// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric discovery with SMPs from a local port: topology with libibnetdisc, then each port's
// PKey and SL2VL tables and each switch's linear forwarding table, several in flight at once
// over libibumad. And the incremental re-discovery: a check of the whole fabric against the
// model in force, then only the tables of ports that changed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

// SMPs discovery keeps in flight at once from its port. rdma-qos-sad is not the SM, and its
// SMPs share the switches' SMAs (and the SM port's VL15 buffers) with the SM's own: by default
// it keeps OpenSM's bound on its sweeps (max_wire_smps, default 4), not more.
constexpr size_t kDefaultSmpWindow = 4;
// The most --smp-window takes: the SMPs go round-robin over their destinations, so 64 already
// keeps dozens of SMAs busy at once; more only lengthens the queues at them.
constexpr size_t kMaxSmpWindow = 64;

struct DiscoveryOptions {
  std::string ca;      // empty: the first CA
  int port = 0;        // 0: the first active port
  int timeout_ms = 0;  // per SMP; 0: libibmad's default
  int retries = 0;     // libibmad's resends of one SMP
  // Whole attempts of one table read (each with libibmad's resends) before the table counts
  // as missing: one lost answer costs a retry of that block, not the discovery.
  int attempts = 3;
  // SMPs in flight at once (1..kMaxSmpWindow), the topology walk's and the table reads'.
  size_t smp_window = kDefaultSmpWindow;
  // The M_Key every SMP carries (IBA 14.2.4; OpenSM's m_key). A port M_Key-protected at level 2
  // or 3 answers no SMP without it. 0: none.
  uint64_t m_key = 0;
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
  // Live links across which no node answered (each naming the port at this end: node GUID,
  // port, LID, directed route): what ports M_Key-protected at level 2 or 3 look like to a
  // discovery without their M_Key. The model lacks whatever is behind them.
  std::vector<std::string> unanswered;
};

// Why the daemon must not start from `found` (kInvalidArgument): nodes behind live links did
// not answer, as ports M_Key-protected without `m_key` do; the message says what to do. nullopt
// when every live link was answered across.
std::optional<rdmaqos::Error> m_key_refusal(const Discovery& found, uint64_t m_key);

// Why `found` must not replace a model in force (a re-discovery that missed tables gives a
// degraded model): kTimeout, the tables that did not answer; nullopt when it may.
std::optional<rdmaqos::Error> replacement_refused(const Discovery& found);

// The whole fabric, or an error: a discovery whose topology or forwarding tables fail half-way
// returns no model; one that misses PKey or SL2VL tables lists them in `missing`. Nodes are in
// node GUID order.
rdmaqos::Result<Discovery> discover_fabric(const DiscoveryOptions& options);

// An incremental re-discovery: the model a full discovery would give now, or why it could not
// be had that way (then the caller runs a full one).
struct IncrementalOutcome {
  std::optional<Discovery> found;
  // When not found: why a full discovery is needed. kInvalidArgument: the model in force
  // cannot start one (incomplete, not of this node, most tables changed); kMalformed: the
  // fabric did not answer as a consistent fabric does; kTransport: no SMP port.
  std::optional<rdmaqos::Error> fallback;
  // What it took, for the log and the bench.
  size_t nodes = 0;        // nodes checked
  size_t check_smps = 0;   // SMPs of the check (NodeInfo, SwitchInfo, PortInfo, LFT, ...)
  size_t tables_kept = 0;  // PKey and SL2VL tables taken over from the previous model
  size_t tables_read = 0;  // ... and read again
  std::string changes;     // what changed since the previous model, in words
};

// Re-discovers the fabric against `previous` (the model in force, as discovery_from_json reads
// it back from a discovery's JSON): see discovery_incremental.h. Falls back (found empty) when
// `previous` is incomplete or not of this fabric, a check SMP goes unanswered, or most tables
// changed. Opens the same process-wide SMP port as discover_fabric (smp_port): a process that
// falls back runs the full discovery in a new process (umad2sim).
IncrementalOutcome rediscover_fabric(const DiscoveryOptions& options, const Discovery& previous);

}  // namespace rdmaqos::sad
