// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The names the site's rules compare against, from the numeric ids Slurm hands the plugin.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "rdma-qos/slurm/site_rules.h"

namespace rdmaqos::slurm {

// Unknown ids become their numbers ("1234"): a rule cannot name them, so they are refused a
// reserved class rather than let through.
Identity identity_of(uid_t uid, gid_t gid, const std::vector<gid_t>& supplementary,
                     std::string account);

// "alice (groups alice, storage; account io)": for messages.
std::string describe(const Identity& who);

}  // namespace rdmaqos::slurm
