// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* One rdma_cm connection carrying the program's private data, for the rdmacm-qos `cm` VM
 * group's connection-tag scenarios: the server prints the private data of the CONNECT_REQUEST
 * exactly as its program receives it (length and every byte, in hex), accepts, and waits for
 * one message; the client connects with DATA as its private data (the string's bytes, without
 * its NUL) and an optional TOS, and sends that message.
 *   cm_private_data server ADDR PORT
 *   cm_private_data client ADDR PORT BIND_ADDR DATA [TOS] */
#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int addr_of(const char* ip, const char* port, struct sockaddr_storage* out) {
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  if (getaddrinfo(ip, port, &hints, &res) != 0) return -1;
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

static struct rdma_cm_event* next_event(struct rdma_event_channel* ch,
                                        enum rdma_cm_event_type type) {
  struct rdma_cm_event* ev;
  if (rdma_get_cm_event(ch, &ev) != 0) {
    perror("rdma_get_cm_event");
    return NULL;
  }
  if (ev->event != type || ev->status != 0) {
    fprintf(stderr, "event %s status %d, expected %s\n", rdma_event_str(ev->event), ev->status,
            rdma_event_str(type));
    rdma_ack_cm_event(ev);
    return NULL;
  }
  return ev;
}

static int expect(struct rdma_event_channel* ch, enum rdma_cm_event_type type) {
  struct rdma_cm_event* ev = next_event(ch, type);
  if (ev == NULL) return -1;
  rdma_ack_cm_event(ev);
  return 0;
}

static int create_qp(struct rdma_cm_id* id) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, NULL, &a) != 0) {
    perror("rdma_create_qp");
    return -1;
  }
  return 0;
}

static char message[16];

static int server(struct rdma_event_channel* ch, struct sockaddr_storage* sa) {
  struct rdma_cm_id *listen_id, *id;
  struct rdma_cm_event* ev;
  struct ibv_mr* mr;
  struct ibv_wc wc;
  const unsigned char* pd;
  int i;
  if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
      rdma_bind_addr(listen_id, (struct sockaddr*)sa) != 0 || rdma_listen(listen_id, 1) != 0) {
    perror("listen");
    return 1;
  }
  if ((ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST)) == NULL) return 1;
  id = ev->id;
  pd = ev->param.conn.private_data;
  printf("private_data_len %u\nprivate_data ", ev->param.conn.private_data_len);
  for (i = 0; pd != NULL && i < ev->param.conn.private_data_len; i++) printf("%02x", pd[i]);
  printf("\n");
  fflush(stdout);
  rdma_ack_cm_event(ev);
  if (create_qp(id) != 0 || (mr = rdma_reg_msgs(id, message, sizeof message)) == NULL ||
      rdma_post_recv(id, NULL, message, sizeof message, mr) != 0 || rdma_accept(id, NULL) != 0 ||
      expect(ch, RDMA_CM_EVENT_ESTABLISHED) != 0) {
    perror("accept");
    return 1;
  }
  if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS) {
    fprintf(stderr, "no message received\n");
    return 1;
  }
  printf("received %.*s\n", (int)wc.byte_len, message);
  if (expect(ch, RDMA_CM_EVENT_DISCONNECTED) != 0) return 1;
  rdma_dereg_mr(mr);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  printf("cm_private_data: server ok\n");
  return 0;
}

static int client(struct rdma_event_channel* ch, struct sockaddr_storage* dst,
                  struct sockaddr_storage* src, const char* data, int tos) {
  struct rdma_cm_id* id;
  struct rdma_conn_param param;
  struct ibv_mr* mr;
  struct ibv_wc wc;
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
      rdma_resolve_addr(id, (struct sockaddr*)src, (struct sockaddr*)dst, 2000) != 0 ||
      expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED) != 0) {
    fprintf(stderr, "address not resolved\n");
    return 1;
  }
  if (tos >= 0) {
    uint8_t byte = (uint8_t)tos;
    if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) != 0) {
      perror("rdma_set_option(TOS)");
      return 1;
    }
  }
  if (rdma_resolve_route(id, 2000) != 0 || expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0 ||
      create_qp(id) != 0) {
    fprintf(stderr, "route not resolved\n");
    return 1;
  }
  memset(&param, 0, sizeof param);
  param.retry_count = 7;
  param.private_data = data;
  param.private_data_len = (uint8_t)strlen(data);
  if (rdma_connect(id, &param) != 0 || expect(ch, RDMA_CM_EVENT_ESTABLISHED) != 0) {
    fprintf(stderr, "not established\n");
    return 1;
  }
  snprintf(message, sizeof message, "tagged-hello");
  if ((mr = rdma_reg_msgs(id, message, sizeof message)) == NULL ||
      rdma_post_send(id, NULL, message, strlen(message), mr, IBV_SEND_SIGNALED) != 0 ||
      rdma_get_send_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS) {
    fprintf(stderr, "send failed\n");
    return 1;
  }
  rdma_disconnect(id);
  expect(ch, RDMA_CM_EVENT_DISCONNECTED);
  rdma_dereg_mr(mr);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  printf("cm_private_data: client ok\n");
  return 0;
}

int main(int argc, char** argv) {
  struct sockaddr_storage dst, src;
  struct rdma_event_channel* ch;
  if (argc < 4 || addr_of(argv[2], argv[3], &dst) != 0) {
    fprintf(stderr, "usage: cm_private_data server ADDR PORT | client ADDR PORT BIND DATA [TOS]\n");
    return 2;
  }
  if ((ch = rdma_create_event_channel()) == NULL) return 1;
  if (strcmp(argv[1], "server") == 0) return server(ch, &dst);
  if (argc < 6 || addr_of(argv[4], "0", &src) != 0) return 2;
  return client(ch, &dst, &src, argv[5], argc > 6 ? atoi(argv[6]) : -1);
}
