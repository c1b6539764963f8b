// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* An rdma_cm program written as programs are: resolves the address and the route of one id (or
 * several, one after the other), asynchronous (event channel) or synchronous (no channel), and
 * says whether each route resolved. It links no rdma-qos library: the QoS decision is asked of
 * rdma_qos_query only if something in the process exports it (the preload module does). Run
 * over the stand-in librdmacm with the preload module.
 *   ib_route_client async|sync|async-destroy|migrate-to-async|migrate-to-sync PORT
 *                   [ROUTE_TIMEOUT_MS [CONNECTIONS [INTERVAL_MS]]]
 * migrate-to-async creates its id without a channel and moves it to one (rdma_migrate_id) before
 * resolving; migrate-to-sync the other way round.
 * With INTERVAL_MS, one connection every INTERVAL_MS, each decision line ending with the
 * milliseconds since the first ("... at_ms 1234"): a long-running program. An async id's events
 * are waited for as an event loop does (poll on the channel, up to 10 s), and each route says
 * how long rdma_resolve_route took to return and the event to come ("returned_ms 1
 * event_ms 302"). async-destroy destroys each id as soon as rdma_resolve_route returns, then
 * waits ROUTE_TIMEOUT_MS + 500 ms before exiting (a worker still using the id would crash it). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma-qos/rdmacm-qos/rdma_qos.h"

static int expect_event(struct rdma_event_channel* ch, enum rdma_cm_event_type type) {
  struct rdma_cm_event* ev;
  struct pollfd p = {ch->fd, POLLIN, 0};
  int ok;
  if (poll(&p, 1, 10000) != 1) return 0;
  if (rdma_get_cm_event(ch, &ev) != 0) return 0;
  ok = ev->event == type && ev->status == 0;
  rdma_ack_cm_event(ev);
  return ok;
}

static long elapsed_ms(void) {
  static struct timespec start;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (start.tv_sec == 0 && start.tv_nsec == 0) start = now;
  return (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
}

static int interval_ms = 0;

/* "decision: sl 3 mtu 4 rate 6 service_id 0x1060cbc", or "decision: errno N". */
static void print_decision(struct rdma_cm_id* id) {
  typedef int (*query_fn)(struct rdma_cm_id*, struct rdma_qos_decision*);
  query_fn query = (query_fn)dlsym(RTLD_DEFAULT, "rdma_qos_query");
  struct rdma_qos_decision d;
  if (query == NULL) return;
  memset(&d, 0, sizeof(d));
  if (query(id, &d) != 0) {
    printf("decision: errno %d\n", errno);
    return;
  }
  printf("decision: sl %u mtu %u rate %u service_id 0x%llx", d.sl, d.mtu_limit, d.rate_limit,
         (unsigned long long)d.service_id);
  if (interval_ms > 0) printf(" at_ms %ld", elapsed_ms());
  printf("\n");
}

static long now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int connect_once(int sync, int destroy, int migrate, const struct sockaddr_in* dst,
                        int route_timeout_ms) {
  struct rdma_event_channel* ch = NULL;
  struct rdma_event_channel* first = NULL; /* migrate-to-sync: the channel it is created on */
  struct rdma_cm_id* id;
  long start, returned;
  if (!sync && (ch = rdma_create_event_channel()) == NULL) return 1;
  if (migrate && sync && (first = rdma_create_event_channel()) == NULL) return 1;
  if (rdma_create_id(migrate ? first : ch, &id, NULL, RDMA_PS_TCP) != 0) return 1;
  if (migrate && rdma_migrate_id(id, ch) != 0) return 1;
  if (rdma_resolve_addr(id, NULL, (struct sockaddr*)dst, 2000) != 0) return 1;
  if (!sync && !expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)) return 1;
  start = now_ms();
  if (rdma_resolve_route(id, route_timeout_ms) != 0) return 1;
  returned = now_ms();
  if (destroy) {
    rdma_destroy_id(id);
    printf("ib_route_client: destroyed while pending, returned_ms %ld\n", returned - start);
    fflush(stdout);
    usleep((useconds_t)(route_timeout_ms + 500) * 1000);
    rdma_destroy_event_channel(ch);
    return 0;
  }
  if (!sync && !expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) return 1;
  printf("ib_route_client: %s route resolved, returned_ms %ld event_ms %ld\n",
         sync ? "sync" : "async", returned - start, now_ms() - start);
  print_decision(id);
  fflush(stdout);
  rdma_destroy_id(id);
  if (ch) rdma_destroy_event_channel(ch);
  if (first) rdma_destroy_event_channel(first);
  return 0;
}

int main(int argc, char** argv) {
  struct sockaddr_in dst;
  int sync, destroy, migrate, route_timeout_ms = 2000, connections = 1, i;
  if (argc < 3) return 2;
  migrate = strncmp(argv[1], "migrate-", 8) == 0;
  sync = strcmp(argv[1], "sync") == 0 || strcmp(argv[1], "migrate-to-sync") == 0;
  destroy = strcmp(argv[1], "async-destroy") == 0;
  if (argc > 3) route_timeout_ms = atoi(argv[3]);
  if (argc > 4) connections = atoi(argv[4]);
  if (argc > 5) interval_ms = atoi(argv[5]);
  elapsed_ms();
  memset(&dst, 0, sizeof(dst));
  dst.sin_family = AF_INET;
  dst.sin_port = htons((unsigned short)atoi(argv[2]));
  inet_pton(AF_INET, "10.0.0.2", &dst.sin_addr);
  for (i = 0; i < connections; ++i) {
    if (connect_once(sync, destroy, migrate, &dst, route_timeout_ms) != 0) return 1;
    if (interval_ms > 0) usleep((useconds_t)interval_ms * 1000);
  }
  return 0;
}
