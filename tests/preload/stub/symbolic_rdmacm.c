// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Stands in for a librdmacm built with -Bsymbolic-functions (Ubuntu's default linker flags):
 * its own calls from rdma_create_ep to rdma_create_id and rdma_resolve_route, and from
 * rdma_destroy_ep to rdma_destroy_id, and rsockets' (rsocket, rconnect and rclose to
 * rdma_create_id, rdma_resolve_route and rdma_destroy_id), bind inside the library, where no
 * LD_PRELOAD interposer sees them. Every id lives in one slot, so a new id has the address of the
 * last destroyed one, as a reused allocation would. */
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <string.h>

static struct rdma_cm_id slot;
static int slot_in_use;

int rdma_create_id(struct rdma_event_channel* channel, struct rdma_cm_id** id, void* context,
                   enum rdma_port_space ps) {
  if (slot_in_use) {
    errno = EBUSY;
    return -1;
  }
  memset(&slot, 0, sizeof slot);
  slot.channel = channel;
  slot.context = context;
  slot.ps = ps;
  slot_in_use = 1;
  *id = &slot;
  return 0;
}

int rdma_destroy_id(struct rdma_cm_id* id) {
  (void)id;
  slot_in_use = 0;
  return 0;
}

int rdma_resolve_route(struct rdma_cm_id* id, int timeout_ms) {
  (void)id;
  (void)timeout_ms;
  return 0;
}

int rdma_create_ep(struct rdma_cm_id** id, struct rdma_addrinfo* res, struct ibv_pd* pd,
                   struct ibv_qp_init_attr* qp_init_attr) {
  (void)pd;
  (void)qp_init_attr;
  if (rdma_create_id(NULL, id, NULL, (enum rdma_port_space)res->ai_port_space) != 0) return -1;
  if (res->ai_dst_addr != NULL && !(res->ai_flags & RAI_PASSIVE) &&
      rdma_resolve_route(*id, 2000) != 0) {
    rdma_destroy_id(*id);
    return -1;
  }
  return 0;
}

void rdma_destroy_ep(struct rdma_cm_id* id) {
  rdma_destroy_id(id);
}

/* rsockets: one stream socket at a time, numbered as librdmacm numbers it (its id's channel fd;
 * any number will do here). rsockets rejects the TOS and priority options itself. */
enum { kSocket = 42 };

int rsocket(int domain, int type, int protocol) {
  (void)domain;
  (void)protocol;
  struct rdma_cm_id* id = NULL;
  if (type != SOCK_STREAM) {
    errno = ENOTSUP;
    return -1;
  }
  if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0) return -1;
  return kSocket;
}

int rsetsockopt(int socket, int level, int optname, const void* optval, socklen_t optlen) {
  (void)socket;
  (void)level;
  (void)optname;
  (void)optval;
  (void)optlen;
  errno = ENOTSUP;
  return -1;
}

int rconnect(int socket, const struct sockaddr* addr, socklen_t addrlen) {
  (void)addr;
  (void)addrlen;
  if (socket != kSocket || !slot_in_use) {
    errno = EBADF;
    return -1;
  }
  return rdma_resolve_route(&slot, 2000);
}

int rclose(int socket) {
  if (socket != kSocket) {
    errno = EBADF;
    return -1;
  }
  return rdma_destroy_id(&slot);
}
