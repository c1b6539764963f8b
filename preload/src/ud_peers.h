// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// UD peers: address handles a program creates for an rdma_cm UD id's peer (from a work
// completion, say) get the id's decision too. Which (PD, GID) each id registered is kept, to
// forget it with the id.
#pragma once

#include <rdma/rdma_cma.h>

#include <optional>

#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace rdmaqos::preload {

bool is_ud(rdma_cm_id* id);
void register_ud_peer(rdma_cm_id* id, const std::optional<rdmacm::CmDecision>& d,
                      const providers::CmConnection& cm);
// Another live id on the same PD reaching the same peer keeps the peer's decision.
void erase_ud_peer(const rdma_cm_id* id);

// The UD peers' lock, for the module's fork handlers (fork_guard.cpp).
void lock_ud_peers_for_fork();
void unlock_ud_peers_after_fork();

}  // namespace rdmaqos::preload
