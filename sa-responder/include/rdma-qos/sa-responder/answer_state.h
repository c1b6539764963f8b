// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What answers are computed from (the fabric model, the partitions, the compiled policy, the
// multicast groups) and how both SA front ends build it from their files: rdma-qos-sad from the
// files it reads at start, reload and re-discovery, the OpenSM plugin from the files OpenSM's
// configuration names, at every new copy of OpenSM's subnet. One loader, so a policy or
// partitions file means the same thing, with the same diagnostics, under both.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/policy/policy.h"
#include "rdma-qos/sa-responder/fabric_model.h"
#include "rdma-qos/sa-responder/multicast.h"

namespace rdmaqos::sad {

// Everything one answer reads; replaced as a whole (a reload never changes it under a query).
struct AnswerState {
  std::shared_ptr<const FabricModel> model;
  std::shared_ptr<const policy::Fabric> policy_fabric;   // with the partitions
  std::shared_ptr<const policy::CompiledPolicy> policy;  // null: partition SLs only
  // The multicast groups a PathRecord may name: the IPoIB broadcast groups the partitions
  // imply (OpenSM's live groups replace them where the model has them: AnswerService).
  std::shared_ptr<const std::vector<MulticastGroup>> groups;
};

// One configuration file as its front end read it.
struct StateFile {
  std::string path;
  std::shared_ptr<const std::string> text;  // null: it could not be read
  std::string error;                        // why not, when `text` is null
};

struct StateInputs {
  std::optional<StateFile> partitions;  // nullopt: the default partition of every port
  std::optional<StateFile> policy;      // nullopt: no policy (partition SLs)
  // The policy's text parsed already (the plugin parses it once for its qos-setup too); null:
  // parsed here.
  std::shared_ptr<const policy::ParseResult> parsed;
  // OpenSM's QoS options: each level's SL is checked against their SL2VL tables (warnings).
  std::optional<policy::QosConfig> qos;
  uint8_t subnet_timeout = 18;  // of the IPoIB broadcast groups' packet life
};

struct StateLoad {
  std::optional<AnswerState> state;      // nullopt: errors (the caller keeps what it had)
  std::vector<std::string> diagnostics;  // "FILE:LINE:COL: error: ..." in file order
  std::vector<bool> errors;              // which of `diagnostics` are errors
};

// The partitions and the policy compiled against `model`. A file that cannot be read is the
// only diagnostic given for it, and nothing is compiled then: a policy compiled against
// partitions that were not read would report errors that are not in it. Pure: no I/O.
StateLoad load_answer_state(std::shared_ptr<const FabricModel> model, const StateInputs& inputs);

}  // namespace rdmaqos::sad
