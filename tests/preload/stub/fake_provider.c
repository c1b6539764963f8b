// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Stands in for libibverbs behind the preload module (after it in LD_PRELOAD, with its symbol
 * versions, so the module's dlvsym(RTLD_NEXT) finds it): each ibv_modify_qp succeeds and says
 * on stdout what it was given; ibv_query_pkey answers the default P_Key 0xffff at index 0 and
 * ibv_query_qp port 1 and P_Key index 0 (what the module asks of a plain-verbs QP at RTR). */
#include <endian.h>
#include <infiniband/verbs.h>
#include <stdio.h>

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  (void)qp;
  printf("provider: ibv_modify_qp mask 0x%x sl %u path_mtu %u\n", (unsigned)mask,
         (unsigned)attr->ah_attr.sl, (unsigned)attr->path_mtu);
  fflush(stdout);
  return 0;
}

int ibv_query_pkey(struct ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  (void)context;
  (void)port_num;
  if (index != 0) return -1;
  *pkey = htobe16(0xffff);
  return 0;
}

int ibv_query_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask,
                 struct ibv_qp_init_attr* init) {
  (void)qp;
  (void)mask;
  (void)init;
  attr->port_num = 1;
  attr->pkey_index = 0;
  return 0;
}
