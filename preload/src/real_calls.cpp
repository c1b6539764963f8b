// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Looking up the real functions, by the symbol versions current programs link against.
#include "real_calls.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace rdmaqos::preload {
namespace {

// Each table is filled once, under one lock, instead of as a function-local static: a fork
// while another thread ran a static's initialiser left the child's copy "being initialised" for
// ever, so the child's first rdma_cm call hung in __cxa_guard_acquire (preload.fork_locks, about
// 1 run in 10 under load). The fork handlers take this lock, so a fork waits for a fill under way
// and none starts during it; and a table is still filled only on first use, so a librdmacm that
// a plugin loads after an early fork is still found. The lock and the tables (defined below,
// read inline through real_calls.h) are all constant-initialised: no guard of their own.
constinit std::mutex g_fill;

template <typename Calls, typename Fill>
const Calls& filled_once(Calls& table, std::atomic<bool>& filled, Fill fill) {
  if (filled.load(std::memory_order_acquire)) return table;
  std::lock_guard lock(g_fill);
  if (!filled.load(std::memory_order_relaxed)) {
    fill(table);
    filled.store(true, std::memory_order_release);
  }
  return table;
}

// The already loaded library, whatever scope it was loaded into. A plugin that dlopen()s
// librdmacm with RTLD_LOCAL keeps it out of the global scope RTLD_NEXT searches, yet its calls
// still bind to our interposers first. RTLD_NOLOAD never loads anything (a program without the
// library keeps null pointers); the reference it takes is kept for the process, so the library
// cannot be unloaded under the pointers in the table.
void* loaded_library(const char* soname) {
  return dlopen(soname, RTLD_NOLOAD | RTLD_LAZY);
}

template <typename Fn>
void look_up(Fn& slot, void* library, const char* name, const char* version) {
  void* sym = dlvsym(RTLD_NEXT, name, version);
  if (sym == nullptr) sym = dlsym(RTLD_NEXT, name);
  // A handle's own scope is the library and its dependencies: never this module.
  if (sym == nullptr && library != nullptr) sym = dlvsym(library, name, version);
  if (sym == nullptr && library != nullptr) sym = dlsym(library, name);
  slot = reinterpret_cast<Fn>(sym);
}

}  // namespace

constinit VerbsCalls g_real_verbs;
constinit RdmacmCalls g_real_rdmacm;
constinit std::atomic<bool> g_real_verbs_filled{false};
constinit std::atomic<bool> g_real_rdmacm_filled{false};

const VerbsCalls& fill_real_verbs() {
  return filled_once(g_real_verbs, g_real_verbs_filled, [](VerbsCalls& c) {
    constexpr const char* kVersion = "IBVERBS_1.1";
    void* lib = loaded_library("libibverbs.so.1");
    look_up(c.modify_qp, lib, "ibv_modify_qp", kVersion);
    look_up(c.create_ah, lib, "ibv_create_ah", kVersion);
    look_up(c.destroy_qp, lib, "ibv_destroy_qp", kVersion);
    look_up(c.query_qp, lib, "ibv_query_qp", kVersion);
    look_up(c.query_pkey, lib, "ibv_query_pkey", kVersion);
  });
}

const RdmacmCalls& fill_real_rdmacm() {
  return filled_once(g_real_rdmacm, g_real_rdmacm_filled, [](RdmacmCalls& c) {
    constexpr const char* kVersion = "RDMACM_1.0";
    void* lib = loaded_library("librdmacm.so.1");
    look_up(c.create_id, lib, "rdma_create_id", kVersion);
    look_up(c.set_option, lib, "rdma_set_option", kVersion);
    look_up(c.resolve_route, lib, "rdma_resolve_route", kVersion);
    look_up(c.connect, lib, "rdma_connect", kVersion);
    look_up(c.accept, lib, "rdma_accept", kVersion);
    look_up(c.destroy_id, lib, "rdma_destroy_id", kVersion);
    look_up(c.migrate_id, lib, "rdma_migrate_id", kVersion);
    look_up(c.create_ep, lib, "rdma_create_ep", kVersion);
    look_up(c.destroy_ep, lib, "rdma_destroy_ep", kVersion);
    look_up(c.get_cm_event, lib, "rdma_get_cm_event", kVersion);
    look_up(c.ack_cm_event, lib, "rdma_ack_cm_event", kVersion);
    look_up(c.rsocket, lib, "rsocket", kVersion);
    look_up(c.rsetsockopt, lib, "rsetsockopt", kVersion);
    look_up(c.rgetsockopt, lib, "rgetsockopt", kVersion);
    look_up(c.rconnect, lib, "rconnect", kVersion);
    look_up(c.rclose, lib, "rclose", kVersion);
  });
}

void lock_real_calls_for_fork() {
  g_fill.lock();
}

void unlock_real_calls_after_fork() {
  g_fill.unlock();
}

}  // namespace rdmaqos::preload
