// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Connection setup time per rdma_cm connection, for the rdmacm-qos bench: the client sets up
 * COUNT connections one after the other and times, for each, route resolution plus QP creation
 * (rdma_resolve_route -> ROUTE_RESOLVED, rdma_create_qp) and the connect (rdma_connect ->
 * ESTABLISHED); it prints one line per connection and the median and p99 of each. The server
 * accepts COUNT connections and exits when they are all disconnected.
 *   cm_setup_time server ADDR PORT COUNT
 *   cm_setup_time client ADDR PORT COUNT BIND_ADDR [TURN_IN TURN_OUT]
 * With TURN_IN and TURN_OUT (FIFOs), the client reads one byte from TURN_IN before each
 * connection and writes one to TURN_OUT after it: clients joined in a ring take turns, one
 * connection each, so the guest's slow phases (TCG on a shared host) hit all alike.
 * CM_SETUP_TOS=N in the client's environment: the client sets TOS N itself (rdma_set_option,
 * inside the timed window, just before rdma_resolve_route), as a program that chose its own
 * traffic class does: the reference that tells what the level's TOS costs the kernel from what
 * the module itself costs. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int addr_of(const char* ip, int port, struct sockaddr_in* sin) {
  memset(sin, 0, sizeof(*sin));
  sin->sin_family = AF_INET;
  sin->sin_port = htons((unsigned short)port);
  return inet_pton(AF_INET, ip, &sin->sin_addr) == 1 ? 0 : -1;
}

static int wait_event(struct rdma_event_channel* ch, enum rdma_cm_event_type type) {
  struct rdma_cm_event* ev;
  int ok;
  if (rdma_get_cm_event(ch, &ev) != 0) return -1;
  ok = ev->event == type && ev->status == 0;
  if (!ok) fprintf(stderr, "event %s status %d\n", rdma_event_str(ev->event), ev->status);
  rdma_ack_cm_event(ev);
  return ok ? 0 : -1;
}

static void qp_attr(struct ibv_qp_init_attr* a) {
  memset(a, 0, sizeof(*a));
  a->qp_type = IBV_QPT_RC;
  a->cap.max_send_wr = a->cap.max_recv_wr = 1;
  a->cap.max_send_sge = a->cap.max_recv_sge = 1;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void report(const char* what, double* v, int n) {
  int p99 = (99 * n + 99) / 100 - 1; /* nearest rank: ceil(0.99 n) - 1 */
  qsort(v, (size_t)n, sizeof(*v), compare);
  printf("%s: median_us %.1f p99_us %.1f max_us %.1f n %d\n", what, v[n / 2], v[p99], v[n - 1], n);
}

static int server(struct rdma_event_channel* ch, struct sockaddr_in* sin, int count) {
  struct rdma_cm_id* listen_id;
  struct rdma_cm_event* ev;
  struct ibv_qp_init_attr attr;
  int disconnected = 0;
  if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
      rdma_bind_addr(listen_id, (struct sockaddr*)sin) != 0 || rdma_listen(listen_id, 64) != 0) {
    perror("listen");
    return 1;
  }
  while (disconnected < count && rdma_get_cm_event(ch, &ev) == 0) {
    struct rdma_cm_id* id = ev->id;
    enum rdma_cm_event_type type = ev->event;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      qp_attr(&attr);
      if (rdma_create_qp(id, NULL, &attr) != 0 || rdma_accept(id, NULL) != 0) {
        perror("accept");
        return 1;
      }
    } else if (type == RDMA_CM_EVENT_DISCONNECTED) {
      rdma_destroy_qp(id);
      rdma_destroy_id(id);
      disconnected++;
    }
  }
  rdma_destroy_id(listen_id);
  printf("cm_setup_time: server ok, %d connections\n", disconnected);
  return disconnected == count ? 0 : 1;
}

/* One turn: a byte from `in` before a connection, a byte to `out` after it (-1: no ring). */
static int take_turn(int in) {
  char token;
  return in < 0 || read(in, &token, 1) == 1 ? 0 : -1;
}

static void pass_turn(int out) {
  if (out >= 0 && write(out, "t", 1) != 1) perror("turn");
}

static int client(struct rdma_event_channel* ch, struct sockaddr_in* dst, struct sockaddr_in* src,
                  int count, int turn_in, int turn_out, int tos) {
  struct rdma_cm_id** ids = calloc((size_t)count, sizeof(*ids));
  double* route = calloc((size_t)count, sizeof(*route));
  double* connect = calloc((size_t)count, sizeof(*connect));
  double* setup = calloc((size_t)count, sizeof(*setup));
  struct ibv_qp_init_attr attr;
  struct rdma_conn_param param;
  int i;
  if (!ids || !route || !connect || !setup) return 1;
  for (i = 0; i < count; i++) {
    double t1, t2, t3;
    if (take_turn(turn_in) != 0) {
      fprintf(stderr, "connection %d: no turn token\n", i);
      return 1;
    }
    if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP) != 0 ||
        rdma_resolve_addr(ids[i], (struct sockaddr*)src, (struct sockaddr*)dst, 2000) != 0 ||
        wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED) != 0) {
      fprintf(stderr, "connection %d: address not resolved\n", i);
      return 1;
    }
    t1 = now_us();
    if (tos >= 0) {
      uint8_t byte = (uint8_t)tos;
      if (rdma_set_option(ids[i], RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof(byte)) != 0) {
        perror("rdma_set_option(TOS)");
        return 1;
      }
    }
    if (rdma_resolve_route(ids[i], 2000) != 0 ||
        wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0) {
      fprintf(stderr, "connection %d: route not resolved\n", i);
      return 1;
    }
    qp_attr(&attr);
    if (rdma_create_qp(ids[i], NULL, &attr) != 0) {
      perror("rdma_create_qp");
      return 1;
    }
    t2 = now_us();
    memset(&param, 0, sizeof(param));
    param.retry_count = 7;
    if (rdma_connect(ids[i], &param) != 0 || wait_event(ch, RDMA_CM_EVENT_ESTABLISHED) != 0) {
      fprintf(stderr, "connection %d: not established\n", i);
      return 1;
    }
    t3 = now_us();
    pass_turn(turn_out);
    route[i] = t2 - t1;
    connect[i] = t3 - t2;
    setup[i] = t3 - t1;
    printf("connection %d: route_qp_us %.1f connect_us %.1f\n", i, route[i], connect[i]);
  }
  for (i = 0; i < count; i++) {
    rdma_disconnect(ids[i]);
    wait_event(ch, RDMA_CM_EVENT_DISCONNECTED);
    rdma_destroy_qp(ids[i]);
    rdma_destroy_id(ids[i]);
  }
  report("route_qp", route, count);
  report("connect", connect, count);
  report("setup", setup, count);
  return 0;
}

int main(int argc, char** argv) {
  struct sockaddr_in sin, local;
  struct rdma_event_channel* ch;
  int count, turn_in = -1, turn_out = -1, tos = -1;
  const char* tos_text = getenv("CM_SETUP_TOS");
  if (argc < 5 || addr_of(argv[2], atoi(argv[3]), &sin) != 0 || (count = atoi(argv[4])) < 1) {
    fprintf(stderr,
            "usage: cm_setup_time server|client ADDR PORT COUNT [BIND_ADDR [TURN_IN TURN_OUT]]\n");
    return 2;
  }
  if ((ch = rdma_create_event_channel()) == NULL) return 1;
  if (strcmp(argv[1], "server") == 0) return server(ch, &sin, count);
  if (argc < 6 || addr_of(argv[5], 0, &local) != 0) return 2;
  /* O_RDWR: opening a FIFO so never waits for the other end (two clients open theirs crosswise). */
  if (argc >= 8 &&
      ((turn_in = open(argv[6], O_RDWR)) < 0 || (turn_out = open(argv[7], O_RDWR)) < 0)) {
    perror("turn FIFO");
    return 2;
  }
  if (tos_text != NULL && *tos_text != '\0') {
    char* end;
    long v = strtol(tos_text, &end, 10);
    if (*end != '\0' || v < 0 || v > 255) {
      fprintf(stderr, "CM_SETUP_TOS wants 0-255, not '%s'\n", tos_text);
      return 2;
    }
    tos = (int)v;
  }
  return client(ch, &sin, &local, count, turn_in, turn_out, tos);
}
