// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The compiled policy kept across model rebuilds: OpenSM ends a sweep far more often than the
// policy file changes, and compiling a 100k-rule policy takes seconds, so a rebuild compiles
// again only when what the compilation reads has changed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-responder/multicast.h"

namespace rdmaqos::osmp {

// True when a policy compiled against `a` resolves the same against `b`: the same nodes (GUID,
// type, description, ports and their GUIDs) and the same SM port. LIDs, rates and links are not
// part of a policy::Fabric, so a sweep that changes only those keeps the compiled policy.
bool same_policy_fabric(const policy::Fabric& a, const policy::Fabric& b);

// What one compilation read and produced. The files are known by their versions
// (PolicySource: the same version is the same text; 0 is no file).
struct CompiledInputs {
  uint64_t policy_version = 0, partitions_version = 0;
  policy::Fabric fabric;  // without partitions: what the files were resolved against
};
struct CompiledOutputs {
  std::shared_ptr<const policy::Fabric> policy_fabric;  // with the partitions
  std::shared_ptr<const policy::CompiledPolicy> policy;
  std::shared_ptr<const std::vector<sad::MulticastGroup>> groups;
};

// The last good compilation; `find` hands it back when the inputs are the same.
class PolicyCache {
 public:
  const CompiledOutputs* find(uint64_t policy_version, uint64_t partitions_version,
                              const policy::Fabric& fabric) const;
  void store(CompiledInputs inputs, CompiledOutputs outputs);
  void clear() { entry_.reset(); }

 private:
  struct Entry {
    CompiledInputs inputs;
    CompiledOutputs outputs;
  };
  std::optional<Entry> entry_;
};

}  // namespace rdmaqos::osmp
