// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Whether OpenSM's own parser would take a policy: the rdma-qos extensions it lacks (the
// `tclass` match criterion) make it reject the whole file, so a policy meant for OpenSM's -Y
// (or its qos_policy_file) is checked for them before it gets there.
#pragma once

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

// One warning per use of an extension, at the keyword, in file order; none for a policy in
// OpenSM's syntax.
Diagnostics opensm_compatibility(const Policy& policy);

}  // namespace rdmaqos::policy
