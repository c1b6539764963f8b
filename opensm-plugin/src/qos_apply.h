// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The policy's qos-setup inside OpenSM. OpenSM programs SL2VL and VLArb tables itself on every
 * heavy sweep (osm_qos.c), comparing each table with its cached copy and sending only what
 * differs; it asks the routing engine's update_sl2vl / update_vlarb callbacks for the final
 * table first. The plugin installs those callbacks (on engines that have none of their own), so
 * OpenSM's own sweep writes the policy's tables: one writer, nothing to flap. This is the C
 * boundary between that OpenSM side (C) and the scopes (C++); no exception crosses it. */
#ifndef RDMA_QOS_OPENSM_PLUGIN_QOS_APPLY_H
#define RDMA_QOS_OPENSM_PLUGIN_QOS_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include "rdma-qos/opensm-plugin/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdma_qos_qa rdma_qos_qa;

/* A port as the policy's groups see it. */
struct rdma_qos_qa_port {
  uint64_t node_guid, port_guid; /* host order; a switch: its GUID for every port */
  uint8_t node_type;             /* 1 CA, 2 switch, 3 router */
  uint8_t port;
  const char* description; /* NodeDescription, NUL-terminated */
  /* The partitions the port is a member of, full or limited (P_Keys & 0x7FFF, any order); a
   * switch: its port 0's. NULL when the scopes need none (rdma_qos_qa_needs_pkeys). */
  const uint16_t* pkeys;
  size_t num_pkeys;
};

/* One line for OpenSM's log; `error` non-zero for errors (else informational). */
typedef void (*rdma_qos_qa_log_fn)(void* ctx, int error, const char* line);

/* The qos-setup state of the plugin `plugin`. Its policy file is the engine's (PolicySource):
 * read when it changed and parsed once, for the PathRecord answers and the scopes alike. Lines
 * for OpenSM's log go to `log`. */
rdma_qos_qa* rdma_qos_qa_new(rdma_qos_osmp* plugin, rdma_qos_qa_log_fn log, void* ctx);
void rdma_qos_qa_free(rdma_qos_qa* qa);

/* At the start of a heavy sweep: the policy as it is now. The scopes are built again only when
 * its text (or the SM's port) changed. Returns 1 when qos-setup scopes are in force, 0 when
 * there are none, -1 when the policy could not be used (the previous scopes stay). Logs what
 * changed, and every diagnostic of the scopes, once per version of the policy; `qos` is
 * OpenSM's qos option (without it OpenSM programs no tables, which is said once too). */
int rdma_qos_qa_load(rdma_qos_qa* qa, uint64_t sm_port_guid, int qos);

/* Whether a scope in force names a pkey group, or a partition group whose name resolved: only
 * then do ports need their pkeys. */
int rdma_qos_qa_needs_pkeys(const rdma_qos_qa* qa);

/* Whether a scope in force names a group by partition name: then the names need resolving
 * (rdma_qos_qa_set_partitions) before the tables are asked for. */
int rdma_qos_qa_needs_partitions(const rdma_qos_qa* qa);

/* The partitions OpenSM knows: `n` names (NUL-terminated) and their P_Keys (host order). A
 * partition group selects the ports holding its partition's P_Key. Returns 1 when the scopes
 * were rebuilt (the partitions changed), 0 when not, -1 when they could not be (the previous
 * ones stay); logs as rdma_qos_qa_load. */
int rdma_qos_qa_set_partitions(rdma_qos_qa* qa, const char* const* names, const uint16_t* pkeys,
                               size_t n);

/* The SL2VL table for (out, in) into `vl_by_sl` (16 entries) when a scope selects it: 1, else 0
 * (the table OpenSM chose stays). Peers may be NULL. */
int rdma_qos_qa_sl2vl(rdma_qos_qa* qa, const struct rdma_qos_qa_port* out,
                      const struct rdma_qos_qa_port* out_peer, uint8_t in,
                      const struct rdma_qos_qa_port* in_peer, uint8_t vl_by_sl[16]);

/* Entries [first, first + n) of the port's high (`high` non-zero) or low VLArb table when a
 * scope gives that table: 1, else 0. `high_limit` gets the scope's vl-high-limit, or -1. */
int rdma_qos_qa_vlarb(rdma_qos_qa* qa, const struct rdma_qos_qa_port* port,
                      const struct rdma_qos_qa_port* peer, int high, size_t first, size_t n,
                      uint8_t* vl, uint8_t* weight, int* high_limit);

/* Whether a routing engine with these callbacks keeps OpenSM's own tables (no qos-setup hooks
 * are installed on it): engine_keeps_own_tables of engine.h. */
int rdma_qos_qa_engine_keeps_tables(int has_update_sl2vl, int has_update_vlarb, int has_path_sl);

/* 1 the first time `engine` is reported as keeping its tables (to say so once in OpenSM's log),
 * else 0. */
int rdma_qos_qa_note_skipped(rdma_qos_qa* qa, const char* engine);

#ifdef __cplusplus
}
#endif

#endif
