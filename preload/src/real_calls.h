// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The real functions behind the module's interposers: one table per library, filled once on the
// first call into that library (as rdma-core's rsockets preload keeps `struct socket_calls real`),
// so an interposer is "ask the table, decide, call the real one" with no lookup of its own.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <atomic>

namespace rdmaqos::preload {

// libibverbs. To interpose one more verb: add its pointer here, look it up in real_calls.cpp,
// export it in exports.map and define it in verbs_interposers.cpp.
struct VerbsCalls {
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int) = nullptr;
  ibv_ah* (*create_ah)(ibv_pd*, ibv_ah_attr*) = nullptr;
  int (*destroy_qp)(ibv_qp*) = nullptr;
  int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*) = nullptr;
  int (*query_pkey)(ibv_context*, uint8_t, int, __be16*) = nullptr;
};

// librdmacm, rdma_cm and rsockets alike. The module does not link librdmacm: a program without
// rdma_cm never loads it, and these stay null until such a program calls them.
struct RdmacmCalls {
  int (*create_id)(rdma_event_channel*, rdma_cm_id**, void*, rdma_port_space) = nullptr;
  int (*set_option)(rdma_cm_id*, int, int, void*, size_t) = nullptr;
  int (*resolve_route)(rdma_cm_id*, int) = nullptr;
  int (*connect)(rdma_cm_id*, rdma_conn_param*) = nullptr;
  int (*accept)(rdma_cm_id*, rdma_conn_param*) = nullptr;
  int (*destroy_id)(rdma_cm_id*) = nullptr;
  int (*migrate_id)(rdma_cm_id*, rdma_event_channel*) = nullptr;
  int (*create_ep)(rdma_cm_id**, rdma_addrinfo*, ibv_pd*, ibv_qp_init_attr*) = nullptr;
  void (*destroy_ep)(rdma_cm_id*) = nullptr;
  int (*get_cm_event)(rdma_event_channel*, rdma_cm_event**) = nullptr;
  int (*ack_cm_event)(rdma_cm_event*) = nullptr;
  int (*rsocket)(int, int, int) = nullptr;
  int (*rsetsockopt)(int, int, int, const void*, socklen_t) = nullptr;
  int (*rgetsockopt)(int, int, int, void*, socklen_t*) = nullptr;
  int (*rconnect)(int, const sockaddr*, socklen_t) = nullptr;
  int (*rclose)(int) = nullptr;
};

// Filled on first use, from the global scope after this module or else from the library
// already loaded (even with RTLD_LOCAL, by a plugin); a missing function stays null (the
// interposer then fails the call as the missing library would: nothing could have succeeded).
// Every interposer asks on every call, so the filled case is inline (one load, no call).
const VerbsCalls& fill_real_verbs();
const RdmacmCalls& fill_real_rdmacm();
extern constinit VerbsCalls g_real_verbs;
extern constinit RdmacmCalls g_real_rdmacm;
extern constinit std::atomic<bool> g_real_verbs_filled;
extern constinit std::atomic<bool> g_real_rdmacm_filled;

inline const VerbsCalls& real_verbs() {
  if (g_real_verbs_filled.load(std::memory_order_acquire)) [[likely]]
    return g_real_verbs;
  return fill_real_verbs();
}

inline const RdmacmCalls& real_rdmacm() {
  if (g_real_rdmacm_filled.load(std::memory_order_acquire)) [[likely]]
    return g_real_rdmacm;
  return fill_real_rdmacm();
}

// For the fork handlers: held across fork() so that no table is half filled in the child.
void lock_real_calls_for_fork();
void unlock_real_calls_after_fork();

}  // namespace rdmaqos::preload
