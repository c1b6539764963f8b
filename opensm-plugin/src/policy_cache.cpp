// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The compiled policy kept across model rebuilds while its inputs stay the same.
#include "rdma-qos/opensm-plugin/policy_cache.h"

namespace rdmaqos::osmp {

bool same_policy_fabric(const policy::Fabric& a, const policy::Fabric& b) {
  if (a.sm_port_guid != b.sm_port_guid || a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const policy::FabricNode& x = a.nodes[i];
    const policy::FabricNode& y = b.nodes[i];
    if (x.node_guid != y.node_guid || x.type != y.type || x.description != y.description ||
        x.num_ports != y.num_ports || x.port_guids != y.port_guids)
      return false;
  }
  return true;
}

const CompiledOutputs* PolicyCache::find(uint64_t policy_version, uint64_t partitions_version,
                                         const policy::Fabric& fabric) const {
  if (!entry_) return nullptr;
  // Versions of the texts (PolicySource compares the texts whenever the file's times cannot
  // vouch for them), not file times.
  if (entry_->inputs.policy_version != policy_version ||
      entry_->inputs.partitions_version != partitions_version ||
      !same_policy_fabric(entry_->inputs.fabric, fabric))
    return nullptr;
  return &entry_->outputs;
}

void PolicyCache::store(CompiledInputs inputs, CompiledOutputs outputs) {
  entry_ = Entry{std::move(inputs), std::move(outputs)};
}

}  // namespace rdmaqos::osmp
