// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Compiled as C: the public C header must stay plain C. */
#include "rdma-qos/sa-client/sa_client.h"

int rdma_qos_sa_c_header_is_plain_c(void);

int rdma_qos_sa_c_header_is_plain_c(void) {
  struct rdma_qos_sa_error err = {RDMA_QOS_SA_OK, 0, {0}};
  struct rdma_qos_sa_options options = {0};
  (void)options;
  return err.code == RDMA_QOS_SA_OK && RDMA_QOS_PR_COMP_SERVICE_ID == 3;
}
