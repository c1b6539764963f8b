// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Stands in for libibverbs behind the preload module (after it in LD_PRELOAD, with its symbol
 * version, so the module's dlvsym(RTLD_NEXT) finds it): each ibv_modify_qp succeeds and says
 * so on stdout. */
#include <infiniband/verbs.h>
#include <stdio.h>

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  (void)qp;
  (void)attr;
  printf("provider: ibv_modify_qp mask 0x%x\n", (unsigned)mask);
  return 0;
}
