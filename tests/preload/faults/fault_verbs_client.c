// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A plain-verbs program on InfiniBand for the preload's fault tests: QPs of a stand-in device
 * (named after the first umad CA, port 1, as ib_stub/plain_verbs_client.c) taken to RTR towards
 * DLID, with faults between the steps, each step an argument:
 *   rtr          one more QP through INIT and RTR
 *   eat-fds      open /dev/null until the process has no file descriptor left (EMFILE)
 *   wait FILE    wait (up to 20 s) until FILE exists: the test changes the host meanwhile
 *   fault_verbs_client DLID STEP...     environment: FAKE_PORT_LID, this node's LID */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint16_t port_lid;

static int fake_query_port(struct ibv_context* ctx, uint8_t port, struct ibv_port_attr* attr,
                           size_t len) {
  (void)ctx;
  if (port != 1) return EINVAL;
  memset(attr, 0, len);
  attr->state = IBV_PORT_ACTIVE;
  attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
  attr->lid = port_lid;
  return 0;
}

static struct ibv_context* fake_context(void) {
  static struct verbs_context vctx;
  static struct ibv_device device;
  static char cas[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  if (umad_get_cas_names(cas, UMAD_MAX_DEVICES) > 0)
    snprintf(device.name, sizeof(device.name), "%s", cas[0]);
  vctx.sz = sizeof(vctx);
  vctx.query_port = fake_query_port;
  vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  vctx.context.device = &device;
  return &vctx.context;
}

static int to_rtr(struct ibv_context* ctx, uint32_t n, uint16_t dlid) {
  static struct ibv_qp qps[64];
  if (n >= 64) return -1;
  struct ibv_qp* qp = &qps[n];
  struct ibv_qp_attr init, rtr;
  memset(&init, 0, sizeof init);
  memset(&rtr, 0, sizeof rtr);
  qp->context = ctx;
  qp->qp_num = 0x100 + n;
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) != 0) return -1;
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = IBV_MTU_4096;
  rtr.dest_qp_num = 0x200 + n;
  rtr.ah_attr.dlid = dlid;
  rtr.ah_attr.port_num = 1;
  return ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN);
}

int main(int argc, char** argv) {
  const char* lid = getenv("FAKE_PORT_LID");
  if (argc < 3 || lid == NULL) {
    fprintf(stderr, "usage: FAKE_PORT_LID=LID fault_verbs_client DLID STEP...\n");
    return 2;
  }
  port_lid = (uint16_t)strtoul(lid, NULL, 0);
  const uint16_t dlid = (uint16_t)strtoul(argv[1], NULL, 0);
  struct ibv_context* ctx = fake_context();
  uint32_t qps = 0;
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "rtr") == 0) {
      if (to_rtr(ctx, qps++, dlid) != 0) return 1;
    } else if (strcmp(argv[i], "eat-fds") == 0) {
      int eaten = 0;
      while (open("/dev/null", O_RDONLY) >= 0) ++eaten;
      if (errno != EMFILE) return 2;
      printf("client: %d descriptors taken, none left\n", eaten);
      fflush(stdout);
    } else if (strcmp(argv[i], "wait") == 0 && i + 1 < argc) {
      const char* file = argv[++i];
      for (int t = 0; access(file, F_OK) != 0; ++t) {
        if (t == 2000) return 2;
        usleep(10000);
      }
    } else {
      return 2;
    }
  }
  return 0;
}
