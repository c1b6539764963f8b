// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Public C API of the rdma_cm extension: per-connection QoS-Class and Service-ID overrides and
 * the QoS decision taken for an rdma_cm id (active side at route resolution, passive at accept). */
#ifndef RDMA_QOS_RDMACM_QOS_RDMA_QOS_H
#define RDMA_QOS_RDMACM_QOS_RDMA_QOS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdma_cm_id;

#define RDMA_QOS_API_VERSION 1

/* The decision for one id. Fields are meaningful only when their has_ flag is set. */
struct rdma_qos_decision {
  uint64_t service_id; /* the Service-ID the policy was matched on */
  uint16_t qos_class;  /* the QoS-Class matched on (has_qos_class) */
  uint8_t has_qos_class;
  uint8_t sl; /* the level's service level */
  uint8_t has_traffic_class;
  uint8_t traffic_class; /* RoCE: DSCP << 2, from roce_sl2tclass */
  uint8_t has_mtu_limit;
  uint8_t mtu_limit; /* enum ibv_mtu */
  uint8_t has_rate_limit;
  uint8_t rate_limit; /* enum ibv_rate */
  int32_t rule;       /* index of the matching rule, -1: the policy's default level */
  char level[64];     /* the level's name, NUL-terminated (may be cut) */
};

/* Overrides for an id, taken into account by the next route resolution (active side) or accept
 * (passive side). Return 0, or -1 with errno set (EINVAL: no id or value out of range). */
int rdma_qos_set_class(struct rdma_cm_id* id, uint16_t qos_class);
int rdma_qos_set_service_id(struct rdma_cm_id* id, uint64_t service_id);

/* The override set for the id; -1 with errno ENOENT when none is set. */
int rdma_qos_get_class(struct rdma_cm_id* id, uint16_t* qos_class);
int rdma_qos_get_service_id(struct rdma_cm_id* id, uint64_t* service_id);

/* The decision taken for the id; -1 with errno ENOENT while there is none (no policy, before
 * route resolution / accept, or not handled by the preload module). */
int rdma_qos_query(struct rdma_cm_id* id, struct rdma_qos_decision* decision);

/* "MAJOR.MINOR.PATCH" of the library; RDMA_QOS_API_VERSION is the API level. */
const char* rdma_qos_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_QOS_RDMACM_QOS_RDMA_QOS_H */
