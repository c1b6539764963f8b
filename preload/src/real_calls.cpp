// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Looking up the real functions, by the symbol versions current programs link against.
#include "real_calls.h"

#include <dlfcn.h>

namespace rdmaqos::preload {
namespace {

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

const VerbsCalls& real_verbs() {
  static const VerbsCalls calls = [] {
    VerbsCalls c;
    constexpr const char* kVersion = "IBVERBS_1.1";
    void* lib = loaded_library("libibverbs.so.1");
    look_up(c.modify_qp, lib, "ibv_modify_qp", kVersion);
    look_up(c.create_ah, lib, "ibv_create_ah", kVersion);
    look_up(c.destroy_qp, lib, "ibv_destroy_qp", kVersion);
    look_up(c.query_qp, lib, "ibv_query_qp", kVersion);
    look_up(c.query_pkey, lib, "ibv_query_pkey", kVersion);
    return c;
  }();
  return calls;
}

const RdmacmCalls& real_rdmacm() {
  static const RdmacmCalls calls = [] {
    RdmacmCalls c;
    constexpr const char* kVersion = "RDMACM_1.0";
    void* lib = loaded_library("librdmacm.so.1");
    look_up(c.create_id, lib, "rdma_create_id", kVersion);
    look_up(c.set_option, lib, "rdma_set_option", kVersion);
    look_up(c.resolve_route, lib, "rdma_resolve_route", kVersion);
    look_up(c.connect, lib, "rdma_connect", kVersion);
    look_up(c.accept, lib, "rdma_accept", kVersion);
    look_up(c.destroy_id, lib, "rdma_destroy_id", kVersion);
    look_up(c.get_cm_event, lib, "rdma_get_cm_event", kVersion);
    look_up(c.ack_cm_event, lib, "rdma_ack_cm_event", kVersion);
    look_up(c.rsetsockopt, lib, "rsetsockopt", kVersion);
    look_up(c.rgetsockopt, lib, "rgetsockopt", kVersion);
    look_up(c.rconnect, lib, "rconnect", kVersion);
    look_up(c.rclose, lib, "rclose", kVersion);
    return c;
  }();
  return calls;
}

}  // namespace rdmaqos::preload
