// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rsockets part: what rsetsockopt(IP_TOS / SO_PRIORITY) asked for each socket, given to the
// socket's rdma_cm id when it connects (rsockets itself rejects both options, or passes an int
// where one byte is required). The interposers rsocket, rsetsockopt, rconnect and rclose live in
// rsockets.cpp; the rdma_cm layer reads what is below.
#pragma once

#include <rdma/rdma_cma.h>

#include <optional>

#include "rdma-qos/rdmacm-qos/socket_qos.h"

namespace rdmaqos::preload {

// While rconnect runs on this thread: the QoS of the socket it connects (rsockets resolves the
// route inside rconnect, on this thread, for blocking sockets).
extern thread_local std::optional<rdmacm::SocketQos> connecting_socket;

// rsockets keeps each stream socket's rdma_cm id private, but passes it to rdma_set_option for
// SO_REUSEADDR: while this is set, rdma_set_option only notes the id (take_captured_id), so the
// socket's QoS is tied to its id before it connects, blocking or not.
extern thread_local bool capturing_id;
extern thread_local rdma_cm_id* captured_id;

// While rsocket runs on this thread: whether its stream socket's rdma_cm id was created through
// the module's rdma_create_id. A librdmacm linked with -Bsymbolic-functions creates it inside
// itself, and then none of rsockets' rdma_cm calls reach the module.
extern thread_local bool in_rsocket;
extern thread_local bool rsocket_id_seen;

// The sockets' table lock, for the module's fork handlers (fork_guard.cpp).
void lock_sockets_for_fork();
void unlock_sockets_after_fork();

}  // namespace rdmaqos::preload
