// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm interposers: rdma_create_id, rdma_set_option, rdma_resolve_route, rdma_connect,
// rdma_accept, rdma_get_cm_event, rdma_destroy_id, rdma_create_ep and rdma_destroy_ep in
// unmodified programs. Each passes the
// call on through the table of real functions and runs one step of the rdma_cm layer
// (cm_layer.h) around it; any failure of a step is logged once and the call goes on as the
// program made it.
#include <rdma/rdma_cma.h>

#include <array>
#include <cerrno>

#include "cm_layer.h"
#include "log.h"
#include "real_calls.h"
#include "route_workers.h"
#include "rsockets.h"
#include "ud_peers.h"

using rdmaqos::preload::log_once;
using rdmaqos::preload::real_rdmacm;
using rdmaqos::rdmacm::IdRegistry;

namespace {
// An id on_ud_event has to see (ud_peers.cpp's is_ud, inline here: every event asks).
inline bool may_be_ud(const rdma_cm_id* id) {
  return id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB || id->qp_type == IBV_QPT_UD;
}

// rdma_create_ep resolves the route of an active endpoint by calling rdma_resolve_route. A
// librdmacm linked with -Bsymbolic-functions (Ubuntu's default flags) makes that call inside
// itself, where no interposer sees it: the thread notes here whether ours ran.
thread_local bool in_create_ep = false;
thread_local bool create_ep_resolved_through_us = false;

// Forgets what the module holds for an id about to be destroyed, before the real call (see
// rdma_destroy_id).
void forget_id(rdma_cm_id* id) {
  try {
    // A route worker drops a query for the id, or finishes installing its answer, first.
    rdmaqos::preload::cancel_pending_route(id);
    IdRegistry::instance().erase(id);
    // Only UD ids have peers (register_qp); the rest skip that table's lock.
    if (id != nullptr && may_be_ud(id)) rdmaqos::preload::erase_ud_peer(id);
  } catch (...) {
  }
}

// No librdmacm behind us: nothing could have succeeded.
int no_librdmacm() {
  errno = ENOSYS;
  return -1;
}
}  // namespace

extern "C" {

// Ids created without an event channel are synchronous: librdmacm gives them a private
// channel, and an event the kernel raises for them must be consumed by whoever caused it.
__attribute__((visibility("default"))) int rdma_create_id(rdma_event_channel* channel,
                                                          rdma_cm_id** id, void* context,
                                                          rdma_port_space ps) {
  auto next = real_rdmacm().create_id;
  if (next == nullptr) return no_librdmacm();
  if (rdmaqos::preload::in_rsocket) rdmaqos::preload::rsocket_id_seen = true;
  int rc = next(channel, id, context, ps);
  if (rc == 0 && channel == nullptr && id != nullptr && *id != nullptr) {
    try {
      IdRegistry::instance().set_synchronous(*id);
    } catch (...) {
    }
  }
  return rc;
}

// An id moved to another channel is synchronous exactly when the new one is none (librdmacm then
// gives it a private channel): whether the module consumes its ROUTE_RESOLVED follows.
__attribute__((visibility("default"))) int rdma_migrate_id(rdma_cm_id* id,
                                                           rdma_event_channel* channel) {
  auto next = real_rdmacm().migrate_id;
  if (next == nullptr) return no_librdmacm();
  int rc = next(id, channel);
  if (rc == 0 && id != nullptr) {
    try {
      IdRegistry::instance().set_synchronous(id, channel == nullptr);
    } catch (...) {
    }
  }
  return rc;
}

__attribute__((visibility("default"))) int rdma_set_option(rdma_cm_id* id, int level, int optname,
                                                           void* optval, size_t optlen) {
  auto next = real_rdmacm().set_option;
  if (next == nullptr) return no_librdmacm();
  if (rdmaqos::preload::capturing_id && level == RDMA_OPTION_ID &&
      optname == RDMA_OPTION_ID_REUSEADDR) {
    rdmaqos::preload::captured_id = id;
    return 0;
  }
  // The kernel takes the TOS as one byte; socket-style callers pass an int.
  uint8_t tos_byte = 0;
  if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optval != nullptr &&
      optlen == sizeof(int) && *static_cast<int*>(optval) >= 0 &&
      *static_cast<int*>(optval) <= 255) {
    tos_byte = static_cast<uint8_t>(*static_cast<int*>(optval));
    optval = &tos_byte;
    optlen = sizeof tos_byte;
  }
  int rc = next(id, level, optname, optval, optlen);
  if (rc == 0 && id != nullptr && level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS &&
      optval != nullptr && optlen >= 1) {
    try {
      IdRegistry::instance().set_program_tos(id, *static_cast<uint8_t*>(optval));
    } catch (...) {
    }
  }
  return rc;
}

__attribute__((visibility("default"))) int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  auto next = real_rdmacm().resolve_route;
  if (next == nullptr) return no_librdmacm();
  if (in_create_ep) create_ep_resolved_through_us = true;
  if (id != nullptr) {
    try {
      // A route worker still resolves this id: the kernel would refuse a second resolution of
      // an id no longer in ADDR_RESOLVED the same way.
      if (rdmaqos::preload::route_pending(id)) {
        errno = EINVAL;
        return -1;
      }
      // One look at the port's link layer says which step applies (this runs per connection).
      const int link = rdmaqos::preload::link_layer(id);
      if (link == IBV_LINK_LAYER_INFINIBAND && rdmaqos::preload::resolve_ib(id, timeout_ms))
        return 0;
      if (link == IBV_LINK_LAYER_ETHERNET) rdmaqos::preload::before_resolve_route(id);
    } catch (...) {
      log_once("resolve_route_exception", "internal error before rdma_resolve_route; stock QoS");
    }
  }
  return next(id, timeout_ms);
}

__attribute__((visibility("default"))) int rdma_connect(rdma_cm_id* id,
                                                        rdma_conn_param* conn_param) {
  auto next = real_rdmacm().connect;
  if (next == nullptr) return no_librdmacm();
  rdmaqos::preload::ConnectTag tag;
  if (id != nullptr) {
    try {
      rdmaqos::preload::register_qp(id, false, conn_param, &tag);
    } catch (...) {
      log_once("connect_exception", "internal error in rdma_connect; stock QoS");
      tag.added = false;
    }
  }
  if (!tag.added) return next(id, conn_param);
  int rc = next(id, &tag.param);
  if (rc != 0 && errno == EINVAL) {
    // Nothing the tag adds should be refused; if it is, the program's own call is made.
    log_once("connect_tag_refused",
             "rdma_connect failed (EINVAL) with the connection tag in the private data; "
             "connecting without it");
    rc = next(id, conn_param);
  }
  return rc;
}

__attribute__((visibility("default"))) int rdma_accept(rdma_cm_id* id,
                                                       rdma_conn_param* conn_param) {
  auto next = real_rdmacm().accept;
  if (next == nullptr) return no_librdmacm();
  if (id != nullptr) {
    try {
      rdmaqos::preload::register_qp(id, true);
    } catch (...) {
      log_once("accept_exception", "internal error in rdma_accept; stock QoS");
    }
  }
  return next(id, conn_param);
}

__attribute__((visibility("default"))) int rdma_get_cm_event(rdma_event_channel* channel,
                                                             rdma_cm_event** event) {
  auto next = real_rdmacm().get_cm_event;
  if (next == nullptr) return no_librdmacm();
  int rc = next(channel, event);
  if (rc != 0 || event == nullptr || *event == nullptr) return rc;
  rdma_cm_event* ev = *event;
  // Connection setup's other events (address and route resolved, established, ...) of connected
  // ids need nothing: they are let through without a look.
  const bool request = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
  const bool ud = ev->id != nullptr && may_be_ud(ev->id);
  if (!request && !ud) return rc;
  int saved = errno;
  try {
    if (request) rdmaqos::preload::take_connection_tag(ev);
    if (ud) rdmaqos::preload::on_ud_event(ev);
  } catch (...) {
    log_once("cm_event_exception", "internal error in rdma_get_cm_event; UD QoS unchanged");
  }
  errno = saved;
  return rc;
}

__attribute__((visibility("default"))) int rdma_destroy_id(rdma_cm_id* id) {
  auto next = real_rdmacm().destroy_id;
  if (next == nullptr) return no_librdmacm();
  // Forgotten before the real call: once it returns, another thread may get an id at this
  // address and register it, an entry an erase after the call would take. A destroy the kernel
  // refuses leaves a live id with stock QoS from then on, the safe side.
  forget_id(id);
  return next(id);
}

// An endpoint's id is synchronous (no event channel). Whether its route went through the
// module is only known afterwards: with a librdmacm that calls itself directly it did not, and
// that id keeps the kernel's route (stock QoS), said once.
__attribute__((visibility("default"))) int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res,
                                                          ibv_pd* pd,
                                                          ibv_qp_init_attr* qp_init_attr) {
  auto next = real_rdmacm().create_ep;
  if (next == nullptr) return no_librdmacm();
  in_create_ep = true;
  create_ep_resolved_through_us = false;
  int rc = next(id, res, pd, qp_init_attr);
  in_create_ep = false;
  if (rc != 0 || id == nullptr || *id == nullptr) return rc;
  const int saved = errno;
  try {
    IdRegistry::instance().set_synchronous(*id);
    const bool active = res != nullptr && res->ai_dst_addr != nullptr &&
                        (res->ai_flags & RAI_PASSIVE) == 0 && res->ai_route == nullptr;
    if (active && !create_ep_resolved_through_us)
      log_once("create_ep_symbolic",
               "rdma_create_ep resolved a route inside librdmacm without calling "
               "rdma_resolve_route (a librdmacm linked with -Bsymbolic-functions): its "
               "endpoints keep the kernel's route, stock QoS");
  } catch (...) {
  }
  errno = saved;
  return rc;
}

// librdmacm's rdma_destroy_ep destroys the id itself, with a direct call under
// -Bsymbolic-functions: the id is forgotten here, before it, as in rdma_destroy_id.
__attribute__((visibility("default"))) void rdma_destroy_ep(rdma_cm_id* id) {
  auto next = real_rdmacm().destroy_ep;
  if (next == nullptr) return;
  forget_id(id);
  next(id);
}

}  // extern "C"
