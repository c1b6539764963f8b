// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test program for the preload module: three RTR transitions of a QP whose device cannot be
 * queried (no device behind it), so the module cannot tell the link layer each time. */
#include <infiniband/verbs.h>

int main(void) {
  struct ibv_context ctx = {0};
  struct ibv_qp qp = {0};
  struct ibv_qp_attr attr = {0};
  qp.context = &ctx;
  attr.qp_state = IBV_QPS_RTR;
  attr.dest_qp_num = 0xabcd;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  for (int i = 0; i < 3; ++i)
    if (ibv_modify_qp(&qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN) != 0) return 1;
  return 0;
}
