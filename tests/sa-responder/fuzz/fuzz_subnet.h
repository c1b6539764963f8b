// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The subnet the request-side fuzz targets answer on: the unit tests' small fabric model, its
// default partition and a policy with one level beyond DEFAULT (SL, MTU, rate, packet life and
// PKey limits) that a service-ID range selects.
#pragma once

#include <memory>

#include "../unit/test_fabric.h"
#include "rdma-qos/policy/compiled_policy.h"

namespace rdmaqos::sad::testing {

inline constexpr const char* kFuzzPolicy = R"(qos-levels
qos-level
name: DEFAULT
sl: 0
end-qos-level
qos-level
name: L
sl: 3
mtu-limit: 2
rate-limit: 5
packet-life: 8
pkey: 0x10
end-qos-level
end-qos-levels
qos-match-rules
qos-match-rule
service-id: 0x100-0x1FF
qos-level-name: L
end-qos-match-rule
end-qos-match-rules
)";

struct FuzzSubnet {
  FabricModel model = small_model();
  policy::Fabric fabric = model.policy_fabric();
  std::shared_ptr<const policy::CompiledPolicy> compiled;
  FuzzSubnet() {
    fabric.partitions = policy::default_partitions(fabric);
    compiled = policy::load_policy(kFuzzPolicy, &fabric).policy;
  }
};

}  // namespace rdmaqos::sad::testing
