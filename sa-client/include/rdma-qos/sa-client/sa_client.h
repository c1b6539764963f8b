// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Plain C API of the SA client for C programs (C++ code uses shared_client.h): open a client on a
 * port, ask for paths (struct ibv_path_record in, wire layout out), read the SA's QoS
 * capability. No exception crosses this boundary; errors carry the MAD status name. */
#pragma once

#include <infiniband/sa.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdma_qos_sa_client;

enum rdma_qos_sa_error_code {
  RDMA_QOS_SA_OK = 0,
  RDMA_QOS_SA_TRUNCATED = 1,
  RDMA_QOS_SA_MALFORMED = 2,
  RDMA_QOS_SA_MAD_STATUS = 3,
  RDMA_QOS_SA_TIMEOUT = 4,
  RDMA_QOS_SA_TRANSPORT = 5,
  RDMA_QOS_SA_INVALID_ARGUMENT = 6,
};

struct rdma_qos_sa_error {
  enum rdma_qos_sa_error_code code;
  uint16_t mad_status; /* with RDMA_QOS_SA_MAD_STATUS */
  char message[256];   /* NUL-terminated, may be cut short; names the MAD status */
};

/* PathRecord component mask bits (IBA 15.2.5.16). */
enum rdma_qos_pr_comp {
  RDMA_QOS_PR_COMP_SERVICE_ID = 0x3, /* both halves: OpenSM rejects one alone */
  RDMA_QOS_PR_COMP_DGID = 1 << 2,
  RDMA_QOS_PR_COMP_SGID = 1 << 3,
  RDMA_QOS_PR_COMP_DLID = 1 << 4,
  RDMA_QOS_PR_COMP_SLID = 1 << 5,
  RDMA_QOS_PR_COMP_RAW_TRAFFIC = 1 << 6,
  RDMA_QOS_PR_COMP_FLOW_LABEL = 1 << 8,
  RDMA_QOS_PR_COMP_HOP_LIMIT = 1 << 9,
  RDMA_QOS_PR_COMP_TCLASS = 1 << 10,
  RDMA_QOS_PR_COMP_REVERSIBLE = 1 << 11,
  RDMA_QOS_PR_COMP_NUMB_PATH = 1 << 12,
  RDMA_QOS_PR_COMP_PKEY = 1 << 13,
  RDMA_QOS_PR_COMP_QOS_CLASS = 1 << 14,
  RDMA_QOS_PR_COMP_SL = 1 << 15,
  RDMA_QOS_PR_COMP_MTU_SELECTOR = 1 << 16,
  RDMA_QOS_PR_COMP_MTU = 1 << 17,
  RDMA_QOS_PR_COMP_RATE_SELECTOR = 1 << 18,
  RDMA_QOS_PR_COMP_RATE = 1 << 19,
  RDMA_QOS_PR_COMP_PKT_LIFE_SELECTOR = 1 << 20,
  RDMA_QOS_PR_COMP_PKT_LIFE = 1 << 21,
  RDMA_QOS_PR_COMP_PREFERENCE = 1 << 22,
};

struct rdma_qos_sa_options {
  const char* ca;        /* NULL: the first CA with an active InfiniBand port */
  int port;              /* 0: its first active InfiniBand port */
  uint16_t sa_lid;       /* 0: the port's SM LID */
  int timeout_ms;        /* 0: from the SA's ClassPortInfo RespTimeValue */
  int retries;           /* < 0: the default (3) */
  unsigned cache_ttl_ms; /* 0: no path cache */
  size_t cache_capacity; /* entries, with cache_ttl_ms */
};

/* NULL on failure (details in *err when err is not NULL). A client belongs to the process that
 * opened it: in a child after fork(), every call on it fails at once with RDMA_QOS_SA_TRANSPORT
 * and rdma_qos_sa_close() leaves it to the parent; the child opens its own. */
struct rdma_qos_sa_client* rdma_qos_sa_open(const struct rdma_qos_sa_options* options,
                                            struct rdma_qos_sa_error* err);
void rdma_qos_sa_close(struct rdma_qos_sa_client* client);

/* SubnAdmGetTable(PathRecord) for `query` (wire layout) with `comp_mask`. Stores up to
 * `max_paths` answers and returns how many the SA sent (may exceed max_paths), or -1. */
int rdma_qos_sa_path_query(struct rdma_qos_sa_client* client, const struct ibv_path_record* query,
                           uint64_t comp_mask, struct ibv_path_record* paths, int max_paths,
                           struct rdma_qos_sa_error* err);

/* 1 when the SA advertises QoS (ClassPortInfo CapabilityMask2 bit 1), 0 when not, -1 on
 * error. Read once per SA. */
int rdma_qos_sa_qos_supported(struct rdma_qos_sa_client* client, struct rdma_qos_sa_error* err);

/* 1 when the SA advertises MultiPathRecord (ClassPortInfo CapabilityMask bit 10), 0 when not,
 * -1 on error. Read once per SA. */
int rdma_qos_sa_mpr_supported(struct rdma_qos_sa_client* client, struct rdma_qos_sa_error* err);

/* SubnAdmGetMulti(MultiPathRecord) with the requirements of a PathRecord query: `query` and
 * `comp_mask` as for rdma_qos_sa_path_query, converted field by field (its SGID and DGID become
 * one-entry GID lists and must both be in the mask; DLID, SLID and Preference have no
 * MultiPathRecord field and are rejected). The SA answers PathRecords, stored as by
 * rdma_qos_sa_path_query; returns how many, or -1. */
int rdma_qos_sa_multipath_query(struct rdma_qos_sa_client* client,
                                const struct ibv_path_record* query, uint64_t comp_mask,
                                struct ibv_path_record* paths, int max_paths,
                                struct rdma_qos_sa_error* err);

/* Bounds the calls this thread makes from now on, on any client: each fails with
 * RDMA_QOS_SA_TIMEOUT once `budget_ms` milliseconds from this call have passed, whatever
 * retries remain (a caller's own timeout, such as rdma_resolve_route's). Per thread, so threads
 * sharing a client keep their own bounds. 0 or less removes the bound. */
void rdma_qos_sa_set_thread_deadline(int budget_ms);

/* "SA_NO_RECORDS", "BUSY|SA_INSUF_COMPS" ... into buf (always NUL-terminated); returns buf. */
const char* rdma_qos_sa_mad_status_name(uint16_t mad_status, char* buf, size_t len);

#ifdef __cplusplus
}

#include <memory>

namespace rdmaqos::sa {
class Client;
/* Wraps an existing C++ client (tests inject one over a fake transport). */
rdma_qos_sa_client* wrap_c_client(std::unique_ptr<Client> client);
}  // namespace rdmaqos::sa
#endif
