// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The per-port SA clients' map (ib_route_sa.cpp; port_sa_client in cm_layer.h), for the module's
// fork handlers (fork_guard.cpp).
#pragma once

namespace rdmaqos::preload {

// Taken before fork() (a thread may hold it while a port's client opens) and released after it
// in the parent. The child starts with no client: it opens its own umad port on first use.
void lock_port_sa_clients_for_fork();
void unlock_port_sa_clients_after_fork();
void reset_port_sa_clients_in_child();

}  // namespace rdmaqos::preload
