// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A plain-verbs program on InfiniBand, for testing the preload module where no InfiniBand
 * device exists: COUNT QPs of a stand-in device (named after the first umad CA, port 1, so the
 * module's SA query goes through umad2sim to OpenSM on ibsim) are taken through INIT and RTR to
 * DLID, as MPI stacks do after exchanging LIDs out of band, then to RTS. No QP exists: the
 * provider behind the module is stub/fake_provider.c, which prints what ibv_modify_qp was given,
 * and the stand-in device prints each packet-pacing limit it is asked for
 * (ibv_modify_qp_rate_limit), so the modify_qp itself is simulated and only what the module
 * passes on is real.
 *   plain_verbs_client DLID [COUNT]    environment: FAKE_PORT_LID, this node's LID */
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_QPS 256

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

static int fake_modify_qp_rate_limit(struct ibv_qp* qp, struct ibv_qp_rate_limit_attr* attr) {
  printf("provider: ibv_modify_qp_rate_limit qp 0x%x rate_limit %u\n", qp->qp_num,
         attr->rate_limit);
  fflush(stdout);
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
  vctx.modify_qp_rate_limit = fake_modify_qp_rate_limit;
  vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  vctx.context.device = &device;
  return &vctx.context;
}

int main(int argc, char** argv) {
  static struct ibv_qp qps[MAX_QPS];
  const char* lid = getenv("FAKE_PORT_LID");
  int count = argc > 2 ? atoi(argv[2]) : 1;
  if (argc < 2 || lid == NULL || count < 1 || count > MAX_QPS) {
    fprintf(stderr, "usage: FAKE_PORT_LID=LID plain_verbs_client DLID [COUNT]\n");
    return 2;
  }
  port_lid = (uint16_t)strtoul(lid, NULL, 0);
  struct ibv_context* ctx = fake_context();
  for (int i = 0; i < count; ++i) {
    struct ibv_qp* qp = &qps[i];
    struct ibv_qp_attr init = {0}, rtr = {0}, rts = {0};
    qp->context = ctx;
    qp->qp_num = 0x100 + (uint32_t)i;
    init.qp_state = IBV_QPS_INIT;
    init.port_num = 1;
    init.pkey_index = 0;
    if (ibv_modify_qp(qp, &init,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
      return 1;
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = IBV_MTU_4096;
    rtr.dest_qp_num = 0x200 + (uint32_t)i;
    rtr.max_dest_rd_atomic = 1;
    rtr.min_rnr_timer = 12;
    rtr.ah_attr.dlid = (uint16_t)strtoul(argv[1], NULL, 0);
    rtr.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &rtr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
      return 1;
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = 14;
    rts.retry_cnt = 7;
    rts.rnr_retry = 7;
    rts.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &rts,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      return 1;
  }
  return 0;
}
