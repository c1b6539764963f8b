// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Looking up the real functions, by the symbol versions current programs link against.
#include "real_calls.h"

#include <dlfcn.h>

namespace rdmaqos::preload {
namespace {

template <typename Fn>
void look_up(Fn& slot, const char* name, const char* version) {
  void* sym = dlvsym(RTLD_NEXT, name, version);
  if (sym == nullptr) sym = dlsym(RTLD_NEXT, name);
  slot = reinterpret_cast<Fn>(sym);
}

}  // namespace

const VerbsCalls& real_verbs() {
  static const VerbsCalls calls = [] {
    VerbsCalls c;
    constexpr const char* kVersion = "IBVERBS_1.1";
    look_up(c.modify_qp, "ibv_modify_qp", kVersion);
    look_up(c.create_ah, "ibv_create_ah", kVersion);
    look_up(c.destroy_qp, "ibv_destroy_qp", kVersion);
    look_up(c.query_qp, "ibv_query_qp", kVersion);
    look_up(c.query_pkey, "ibv_query_pkey", kVersion);
    return c;
  }();
  return calls;
}

const RdmacmCalls& real_rdmacm() {
  static const RdmacmCalls calls = [] {
    RdmacmCalls c;
    constexpr const char* kVersion = "RDMACM_1.0";
    look_up(c.create_id, "rdma_create_id", kVersion);
    look_up(c.set_option, "rdma_set_option", kVersion);
    look_up(c.resolve_route, "rdma_resolve_route", kVersion);
    look_up(c.connect, "rdma_connect", kVersion);
    look_up(c.accept, "rdma_accept", kVersion);
    look_up(c.destroy_id, "rdma_destroy_id", kVersion);
    look_up(c.get_cm_event, "rdma_get_cm_event", kVersion);
    look_up(c.ack_cm_event, "rdma_ack_cm_event", kVersion);
    look_up(c.rsetsockopt, "rsetsockopt", kVersion);
    look_up(c.rgetsockopt, "rgetsockopt", kVersion);
    look_up(c.rconnect, "rconnect", kVersion);
    look_up(c.rclose, "rclose", kVersion);
    return c;
  }();
  return calls;
}

}  // namespace rdmaqos::preload
