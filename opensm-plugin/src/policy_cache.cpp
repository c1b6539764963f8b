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

const CompiledOutputs* PolicyCache::find(const std::optional<std::string>& policy_text,
                                         const std::optional<std::string>& partitions_text,
                                         const policy::Fabric& fabric) const {
  if (!entry_) return nullptr;
  // The texts themselves, not a file time: a file rewritten within the clock's granularity, or
  // put back to an older copy, is still seen; comparing a few megabytes costs milliseconds.
  if (entry_->inputs.policy_text != policy_text ||
      entry_->inputs.partitions_text != partitions_text ||
      !same_policy_fabric(entry_->inputs.fabric, fabric))
    return nullptr;
  return &entry_->outputs;
}

void PolicyCache::store(CompiledInputs inputs, CompiledOutputs outputs) {
  entry_ = Entry{std::move(inputs), std::move(outputs)};
}

}  // namespace rdmaqos::osmp
