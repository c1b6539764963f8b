// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test program for the preload module over a librdmacm that calls itself directly: an endpoint
 * created and destroyed with rdma_create_ep / rdma_destroy_ep leaves no entry behind (a new id
 * at the same address has no QoS class), and an endpoint whose route the module could not see
 * is said once, as is a stream rsocket whose rdma_cm id the module could not see (its
 * connections keep stock QoS); such a socket leaves nothing behind either. Calls go through the
 * global scope, where the module's interposers come first.
 *   symbolic_client LIBRARY */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define LOOK_UP(var, name)                       \
  do {                                           \
    *(void**)(&var) = dlsym(RTLD_DEFAULT, name); \
    if (var == NULL) {                           \
      fprintf(stderr, "no %s\n", name);          \
      return 2;                                  \
    }                                            \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  int (*create_ep)(struct rdma_cm_id**, struct rdma_addrinfo*, struct ibv_pd*,
                   struct ibv_qp_init_attr*);
  void (*destroy_ep)(struct rdma_cm_id*);
  int (*create_id)(struct rdma_event_channel*, struct rdma_cm_id**, void*, enum rdma_port_space);
  int (*set_class)(struct rdma_cm_id*, uint16_t);
  int (*get_class)(struct rdma_cm_id*, uint16_t*);
  LOOK_UP(create_ep, "rdma_create_ep");
  LOOK_UP(destroy_ep, "rdma_destroy_ep");
  LOOK_UP(create_id, "rdma_create_id");
  LOOK_UP(set_class, "rdma_qos_set_class");
  LOOK_UP(get_class, "rdma_qos_get_class");
  int (*destroy_id)(struct rdma_cm_id*);
  int (*rsocket_)(int, int, int);
  int (*rsetsockopt_)(int, int, int, const void*, socklen_t);
  int (*rconnect_)(int, const struct sockaddr*, socklen_t);
  int (*rclose_)(int);
  LOOK_UP(destroy_id, "rdma_destroy_id");
  LOOK_UP(rsocket_, "rsocket");
  LOOK_UP(rsetsockopt_, "rsetsockopt");
  LOOK_UP(rconnect_, "rconnect");
  LOOK_UP(rclose_, "rclose");

  struct sockaddr_in dst;
  memset(&dst, 0, sizeof dst);
  dst.sin_family = AF_INET;
  dst.sin_port = htons(7471);
  struct rdma_addrinfo res;
  memset(&res, 0, sizeof res);
  res.ai_family = AF_INET;
  res.ai_port_space = RDMA_PS_TCP;
  res.ai_dst_addr = (struct sockaddr*)&dst;
  res.ai_dst_len = sizeof dst;

  struct rdma_cm_id* ep = NULL;
  int rc = create_ep(&ep, &res, NULL, NULL);
  printf("rdma_create_ep %d\n", rc);
  if (rc != 0) return 1;
  printf("rdma_qos_set_class %d\n", set_class(ep, 5));
  destroy_ep(ep);

  struct rdma_cm_id* id = NULL;
  rc = create_id(NULL, &id, NULL, RDMA_PS_TCP);
  uint16_t qos_class = 0;
  int found = get_class(id, &qos_class);
  printf("rdma_create_id %d at the same address %s; class %s\n", rc, id == ep ? "yes" : "no",
         found == 0 ? "inherited" : "none");
  destroy_id(id);

  /* Two stream rsockets, one after the other: the module says once that it cannot see them. */
  for (int round = 0; round < 2; ++round) {
    int s = rsocket_(AF_INET, SOCK_STREAM, 0);
    int tos = 184;
    int set = rsetsockopt_(s, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
    int connected = rconnect_(s, (struct sockaddr*)&dst, sizeof dst);
    printf("rsocket %s rsetsockopt %d rconnect %d rclose %d\n", s >= 0 ? "ok" : "failed", set,
           connected, rclose_(s));
  }
  return 0;
}
