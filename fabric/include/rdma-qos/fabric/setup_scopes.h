// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The policy's qos-setup section resolved against ports: which SL2VL and VLArb tables its scopes
// give a port (first matching scope wins), or none (the port keeps its opensm.conf class
// tables). Works from port descriptions alone, so the CLI (ports read over SMPs) and the OpenSM
// plugin (OpenSM's subnet) share it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/fabric/tables.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::fabric {

// One SL2VL table: the output port it belongs to, the input port it maps for (0 on end ports
// and for traffic a switch sends itself), and the ports linked to both.
struct Sl2VlSite {
  PortRef out;
  std::optional<PortRef> out_peer;
  uint8_t in = 0;
  std::optional<PortRef> in_peer;
};

struct Sl2VlChoice {
  Sl2Vl table{};  // missing entries of the scope's table are VL 0
  rdmaqos::SourceLocation scope;
};

struct VlArbChoice {
  VlArbTable high, low;
  std::optional<uint8_t> high_limit;
  rdmaqos::SourceLocation scope;
  bool has_high = false, has_low = false;  // a scope may give one table only
};

// Whether a scope of the policy names a group with a pkey selector: only then do the ports'
// P_Key tables need reading.
bool scopes_need_pkeys(const policy::Policy& policy);

// Whether a scope names a group with a partition selector: its ports are known only by the
// partition's P_Key, so the P_Key tables need reading once the names are (PartitionKeys).
bool scopes_need_partitions(const policy::Policy& policy);

// Partition names and their P_Keys (15 bits), as the SA resolves a group's `partition:` names:
// from a partitions file, or inside OpenSM from its own partition table.
using PartitionKeys = std::map<std::string, uint16_t, std::less<>>;

class SetupScopes {
 public:
  // `sm_port_guid` resolves node-type SELF. A pkey selector selects the ports whose P_Key
  // table holds one of its P_Keys (PortRef::pkeys). Partition names are not on the wire: with
  // `partitions`, a partition selector is a pkey selector of the named partition's P_Key
  // (policy() shows it so); without, it selects no port. Both cases, and a name `partitions`
  // lacks, leave a warning in diagnostics().
  SetupScopes(policy::Policy policy, uint64_t sm_port_guid,
              std::optional<PartitionKeys> partitions = std::nullopt);

  bool empty() const;
  std::optional<Sl2VlChoice> sl2vl(const Sl2VlSite& site) const;
  std::optional<VlArbChoice> vlarb(const PortRef& port, const std::optional<PortRef>& peer) const;
  bool in_group(const std::string& group, const PortRef& port) const;
  const rdmaqos::Diagnostics& diagnostics() const { return diagnostics_; }
  const policy::Policy& policy() const { return policy_; }

 private:
  bool in_any(const std::vector<std::string>& groups, const std::optional<PortRef>& port) const;

  policy::Policy policy_;
  uint64_t sm_port_guid_ = 0;
  rdmaqos::Diagnostics diagnostics_;
};

}  // namespace rdmaqos::fabric
