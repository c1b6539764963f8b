// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the module asks devices about ports and GIDs, cached where connection setup would
// otherwise pay several queries per connection.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

#include "rdma-qos/providers/av_policy.h"

namespace rdmaqos::preload {

// The link layer of a device's port (IBV_LINK_LAYER_*), or -1 when it cannot be queried.
// Queried once per device name and port: it never changes.
int port_link_layer(ibv_context* ctx, uint8_t port);
// The link kind of (port, GID index): InfiniBand, RoCE v1 or v2 (the GID's type, kept a second).
providers::LinkKind link_kind(ibv_context* ctx, uint8_t port, uint8_t sgid_index);
// The port's base LID (InfiniBand; kept a second), or 0 when it cannot be queried.
uint16_t port_lid(ibv_context* ctx, uint8_t port);
// The P_Key at a port's pkey_index (kept a second); nullopt when it cannot be queried or the
// slot is empty.
std::optional<uint16_t> port_pkey(ibv_context* ctx, uint8_t port, uint16_t index);
// The port a QP is bound to (ibv_query_qp), or 0.
uint8_t qp_port(ibv_qp* qp);
// The QP's P_Key index (ibv_query_qp), or 0 (the port's first) when it cannot be queried.
uint16_t qp_pkey_index(ibv_qp* qp);

// The caches' lock, for the module's fork handlers (fork_guard.cpp).
void lock_ports_for_fork();
void unlock_ports_after_fork();

}  // namespace rdmaqos::preload
