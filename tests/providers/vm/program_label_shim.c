// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test helper for the VM group: stands in for a program that chooses its own flow label. Put
 * before the rdma-qos module in LD_PRELOAD, it sets grh.flow_label (from PROGRAM_FLOW_LABEL)
 * on every address vector and passes the call on, so the module sees a program's label. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  int (*next)(struct ibv_qp*, struct ibv_qp_attr*, int) =
      (int (*)(struct ibv_qp*, struct ibv_qp_attr*, int))dlsym(RTLD_NEXT, "ibv_modify_qp");
  const char* label = getenv("PROGRAM_FLOW_LABEL");
  if ((mask & IBV_QP_AV) && label != NULL)
    attr->ah_attr.grh.flow_label = (uint32_t)strtoul(label, NULL, 0);
  return next(qp, attr, mask);
}
