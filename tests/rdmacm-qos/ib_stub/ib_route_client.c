/* An rdma_cm program written as programs are (no rdma-qos API): resolves the address and the
 * route of one id, asynchronous (event channel) or synchronous (no channel), and says whether
 * the route resolved. Run over the stand-in librdmacm with the preload module.
 *   ib_route_client async|sync PORT */
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int expect_event(struct rdma_event_channel* ch, enum rdma_cm_event_type type) {
  struct rdma_cm_event* ev;
  int ok;
  if (rdma_get_cm_event(ch, &ev) != 0) return 0;
  ok = ev->event == type && ev->status == 0;
  rdma_ack_cm_event(ev);
  return ok;
}

int main(int argc, char** argv) {
  struct rdma_event_channel* ch = NULL;
  struct rdma_cm_id* id;
  struct sockaddr_in dst;
  int sync;
  if (argc < 3) return 2;
  sync = strcmp(argv[1], "sync") == 0;
  memset(&dst, 0, sizeof(dst));
  dst.sin_family = AF_INET;
  dst.sin_port = htons((unsigned short)atoi(argv[2]));
  inet_pton(AF_INET, "10.0.0.2", &dst.sin_addr);
  if (!sync && (ch = rdma_create_event_channel()) == NULL) return 1;
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) return 1;
  if (rdma_resolve_addr(id, NULL, (struct sockaddr*)&dst, 2000) != 0) return 1;
  if (!sync && !expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)) return 1;
  if (rdma_resolve_route(id, 2000) != 0) return 1;
  if (!sync && !expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) return 1;
  printf("ib_route_client: %s route resolved\n", argv[1]);
  rdma_destroy_id(id);
  if (ch) rdma_destroy_event_channel(ch);
  return 0;
}
