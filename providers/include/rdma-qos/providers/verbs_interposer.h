// The verbs interposer's core, separated from symbol lookup and device queries so tests drive it
// with a fake provider ("next") and fake ports. The preload module wires the real ones.
#pragma once

#include <infiniband/verbs.h>

#include <functional>
#include <string>

#include "rdma-qos/providers/av_policy.h"

namespace rdmaqos::providers {

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using CreateAhFn = ibv_ah* (*)(ibv_pd*, ibv_ah_attr*);

// What the interposer needs to know about devices.
struct DeviceProbe {
  // Link kind of (context, port, sgid index).
  std::function<LinkKind(ibv_context*, uint8_t port, uint8_t sgid_index)> link_kind;
  // The QP's port when neither the call nor the registry says (ibv_query_qp in the module).
  std::function<uint8_t(ibv_qp*)> qp_port;
};

struct InterposerHooks {
  VerbsSettings settings;
  DeviceProbe probe;
  std::function<void(const std::string& key, const std::string& message)> log_once;
  std::function<void(const std::string& json_line)> record;  // test hook; may be empty
  // ibv_modify_qp_rate_limit with the rate in kbit/s (0 or an errno value, EOPNOTSUPP when the
  // device has none); may be empty.
  std::function<int(ibv_qp*, uint32_t kbps)> rate_limit;
};

// Wraps one ibv_modify_qp call: never changes the caller's attr, never makes a call fail that
// would have succeeded unchanged (a rejected change is retried as the program asked). After a
// successful transition to RTS of a QP whose decision has a rate, the rate is also set through
// hooks.rate_limit (the AV's static rate stays where the device has no rate limiting).
int interpose_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ModifyQpFn next,
                        const InterposerHooks& hooks);

// Wraps one ibv_create_ah call, with the same guarantees.
ibv_ah* interpose_create_ah(ibv_pd* pd, ibv_ah_attr* attr, CreateAhFn next,
                            const InterposerHooks& hooks);

}  // namespace rdmaqos::providers
