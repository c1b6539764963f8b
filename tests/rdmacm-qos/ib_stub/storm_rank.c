// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* One rank of a job start, written as an event-driven MPI or storage program is: one event
 * channel, an id per peer, every address and then every route resolved at once, the events
 * taken as they come. Peer i is node (FIRST + i) mod NODES, addressed 10.0.x.y with x.y the
 * node's index (the stand-in librdmacm's FAKE_RDMACM_GUIDS names its GUID). Run over the
 * stand-in librdmacm with the preload module; prints one JSON line: routes resolved, how many
 * the module set from an SA path and how many it left to the kernel, errors, and the seconds
 * from the first rdma_resolve_route to the last ROUTE_RESOLVED.
 *   storm_rank PORT PEERS FIRST NODES [ROUTE_TIMEOUT_MS] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Takes events until `want` of type `type` came, or 60 s pass without one; returns how many came
 * and counts the others (or failed ones) in *errors. */
static int take_events(struct rdma_event_channel* ch, enum rdma_cm_event_type type, int want,
                       int* errors) {
  int got = 0;
  while (got < want) {
    struct rdma_cm_event* ev;
    struct pollfd p = {ch->fd, POLLIN, 0};
    if (poll(&p, 1, 60000) != 1) break;
    if (rdma_get_cm_event(ch, &ev) != 0) continue;
    if (ev->event == type && ev->status == 0)
      ++got;
    else
      ++*errors;
    rdma_ack_cm_event(ev);
    if (*errors > want) break;
  }
  return got;
}

int main(int argc, char** argv) {
  struct rdma_event_channel* ch;
  struct rdma_cm_id** ids;
  int port, peers, first, nodes, timeout_ms = 10000, i, errors = 0, addrs, routes;
  int paths = -1, kernel = -1;
  double start, seconds;
  void (*counts)(int*, int*);
  if (argc < 5) {
    fprintf(stderr, "usage: storm_rank PORT PEERS FIRST NODES [ROUTE_TIMEOUT_MS]\n");
    return 2;
  }
  port = atoi(argv[1]);
  peers = atoi(argv[2]);
  first = atoi(argv[3]);
  nodes = atoi(argv[4]);
  if (argc > 5) timeout_ms = atoi(argv[5]);
  if (peers < 1 || nodes < 1 || nodes > 65536) return 2;
  if ((ch = rdma_create_event_channel()) == NULL) return 1;
  if ((ids = calloc((size_t)peers, sizeof(*ids))) == NULL) return 1;
  for (i = 0; i < peers; ++i) {
    struct sockaddr_in dst;
    const int node = (first + i) % nodes;
    memset(&dst, 0, sizeof(dst));
    dst.sin_family = AF_INET;
    dst.sin_port = htons((unsigned short)port);
    dst.sin_addr.s_addr = htonl(0x0a000000u | (unsigned)node);
    if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP) != 0) return 1;
    if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr*)&dst, 2000) != 0) return 1;
  }
  addrs = take_events(ch, RDMA_CM_EVENT_ADDR_RESOLVED, peers, &errors);
  start = now_s();
  for (i = 0; i < peers; ++i)
    if (rdma_resolve_route(ids[i], timeout_ms) != 0) ++errors;
  routes = take_events(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, peers, &errors);
  seconds = now_s() - start;
  counts = (void (*)(int*, int*))dlsym(RTLD_DEFAULT, "fake_rdmacm_counts");
  if (counts != NULL) counts(&paths, &kernel);
  printf(
      "{\"peers\":%d,\"addresses\":%d,\"routes\":%d,\"sa_paths\":%d,\"kernel_routes\":%d,"
      "\"errors\":%d,\"seconds\":%.6f}\n",
      peers, addrs, routes, paths, kernel, errors, seconds);
  for (i = 0; i < peers; ++i) rdma_destroy_id(ids[i]);
  rdma_destroy_event_channel(ch);
  free(ids);
  return routes == peers && errors == 0 ? 0 : 1;
}
