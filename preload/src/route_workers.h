// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The background half of rdma_resolve_route on InfiniBand for ids with an event channel: a few
// worker threads of the module (started on first use) that run the SA query, and the table of
// ids whose route a worker still resolves, so that rdma_destroy_id never races a worker using
// the id.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace rdmaqos::preload {

// At most as many workers as the port's SA client runs queries at once.
constexpr size_t kRouteWorkers = 4;

// Runs `job` on a route worker. False when none could be started (the caller falls back).
bool run_on_route_worker(std::function<void()> job);

// One id's pending route. A worker's hold on the id, from begin_route_install to
// end_pending_route, is what rdma_destroy_id waits for; before it the id is not touched.
struct PendingRoute;

// Registers `id`'s route as pending; null when one already is (the program called
// rdma_resolve_route twice).
std::shared_ptr<PendingRoute> start_pending_route(rdma_cm_id* id);
// Whether a route of `id` is pending.
bool route_pending(rdma_cm_id* id);
// The worker is about to use the id (set its path, or call the real rdma_resolve_route): false
// when the id was destroyed meanwhile, and then the worker must leave it alone.
bool begin_route_install(PendingRoute& pending);
// The worker is done with the id (used or not): a destroy waiting for it goes on.
void end_pending_route(const std::shared_ptr<PendingRoute>& pending);
// rdma_destroy_id / rdma_destroy_ep, before the real call: a route still being queried is
// cancelled (the worker drops its answer and never touches the id); one being installed is
// waited for (one rdma_set_option or non-blocking rdma_resolve_route call).
void cancel_pending_route(rdma_cm_id* id);

// Fork handlers (fork_guard.cpp). The child has none of the parent's workers: their jobs and
// the parent's pending routes are dropped there, and workers start again on first use.
void lock_route_workers_for_fork();
void unlock_route_workers_after_fork();
void reset_route_workers_in_child();
void lock_pending_routes_for_fork();
void unlock_pending_routes_after_fork();
void reset_pending_routes_in_child();

}  // namespace rdmaqos::preload
