// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The OpenSM-compatibility check (see opensm_compat.h).
#include "rdma-qos/policy/opensm_compat.h"

namespace rdmaqos::policy {

Diagnostics opensm_compatibility(const Policy& policy) {
  Diagnostics out;
  for (const MatchRule& r : policy.rules) {
    if (!r.tclass_location) continue;
    // OpenSM's lexer has no keyword for it: a syntax error that rejects the whole file, and
    // OpenSM then answers with partition SLs, as if there were no policy.
    out.push_back({Severity::kWarning, *r.tclass_location,
                   "'tclass' is an rdma-qos extension: OpenSM rejects this policy file",
                   "give OpenSM a copy without tclass criteria, or let rdma-qos-sad or the "
                   "rdma-qos OpenSM plugin (its own policy= file) apply it"});
  }
  return out;
}

}  // namespace rdmaqos::policy
