// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The C boundary between the OpenSM side of the plugin (C, built against OpenSM's headers) and
 * the rdma-qos engine (C++): a fabric builder fed from OpenSM's subnet and the PathRecord /
 * MultiPathRecord answer. No exception crosses it; every call is safe on any thread. */
#ifndef RDMA_QOS_OPENSM_PLUGIN_PLUGIN_H
#define RDMA_QOS_OPENSM_PLUGIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdma_qos_osmp rdma_qos_osmp;
typedef struct rdma_qos_osmp_builder rdma_qos_osmp_builder;

/* One line for OpenSM's log; `error` non-zero for errors. */
typedef void (*rdma_qos_osmp_log_fn)(void* ctx, int error, const char* line);
/* Fills `builder` from OpenSM's subnet (under OpenSM's lock); returns 0 on success. Called on
 * the plugin's own thread, never on a sweep's. */
typedef int (*rdma_qos_osmp_snapshot_fn)(void* ctx, rdma_qos_osmp_builder* builder);
/* The SM's routing engine's SL for the path `slid` -> `dlid` (host order) given the SL chosen
 * so far (`hint`), asked as OpenSM's PathRecord handler asks it (under OpenSM's lock); -1 when
 * the engine routing the subnet now assigns no SLs. Called on the answering thread. */
typedef int (*rdma_qos_osmp_path_sl_fn)(void* ctx, uint8_t hint, uint16_t slid, uint16_t dlid);
/* Sends one response MAD (`len` bytes, MAD header first) to the requester of the request being
 * answered. */
typedef void (*rdma_qos_osmp_send_fn)(const void* ctx, const uint8_t* mad, size_t len);

/* What OpenSM's own configuration says, for defaults the plugin's options override. */
struct rdma_qos_osmp_osm_config {
  const char* qos_policy_file;       /* OpenSM's qos_policy_file; NULL: none */
  int qos;                           /* OpenSM's qos option */
  const char* partition_config_file; /* NULL: none */
  uint8_t subnet_timeout;
  uint64_t sa_key; /* host order */
};

/* Parses `options` (OpenSM's event_plugin_options: "key=value ..."), loads the policy and
 * starts the plugin's thread. NULL (logged) when the options cannot be used. A policy with
 * errors does not fail creation: the plugin then falls back to OpenSM's handlers. */
rdma_qos_osmp* rdma_qos_osmp_create(const char* options, const struct rdma_qos_osmp_osm_config* osm,
                                    rdma_qos_osmp_log_fn log, rdma_qos_osmp_snapshot_fn snapshot,
                                    rdma_qos_osmp_path_sl_fn path_sl, void* ctx);
/* Stops the thread and frees everything. */
void rdma_qos_osmp_destroy(rdma_qos_osmp* plugin);
/* Asks for a new model from OpenSM's subnet (a sweep or routing pass ended). Never blocks. */
void rdma_qos_osmp_refresh(rdma_qos_osmp* plugin);
/* Non-zero once a model and a policy are in force (queries are answered by rdma-qos). */
int rdma_qos_osmp_ready(const rdma_qos_osmp* plugin);

enum rdma_qos_osmp_result {
  RDMA_QOS_OSMP_ANSWERED = 0, /* the response went through `send` */
  RDMA_QOS_OSMP_DROPPED = 1,  /* no response is due (as OpenSM: bad SM_Key, a response) */
  RDMA_QOS_OSMP_FALLBACK = 2, /* not ready or failed: let OpenSM's own handler answer */
  RDMA_QOS_OSMP_DEFERRED = 3  /* one of the plugin's answer threads sends the response later */
};
/* Answers one SA request (`len` bytes from the MAD header on) from `slid` (host order).
 * `send_ctx_size` non-zero lets a large request (an open-ended GetTable) leave the calling
 * thread: the `send_ctx_size` bytes at `send_ctx` are copied and `send` is called later, on an
 * answer thread, with the copy, so they must be plain data that stays meaningful (OpenSM's bind
 * handle and the requester's address, not the request's MAD). 0: always on this thread. */
enum rdma_qos_osmp_result rdma_qos_osmp_answer(rdma_qos_osmp* plugin, const uint8_t* mad,
                                               size_t len, uint16_t slid,
                                               rdma_qos_osmp_send_fn send, const void* send_ctx,
                                               size_t send_ctx_size);

/* The fabric builder: facts read from OpenSM's structures, turned into the engine's model. */
struct rdma_qos_osmp_port {
  uint64_t guid; /* host order */
  uint16_t base_lid;
  uint8_t lmc;
  uint8_t mtu_cap;
  uint8_t link_width_active;
  uint8_t link_speed_active;
  uint8_t link_speed_ext_active;
  uint8_t port_state; /* 4: active */
  uint32_t capability_mask;
  uint16_t capability_mask2; /* PortInfo CapabilityMask2, host order */
  uint64_t subnet_prefix;    /* host order */
  uint64_t peer_node_guid;   /* 0: no peer */
  uint8_t peer_port;
};

/* One of OpenSM's live multicast groups (its MCMemberRecord parameters, selectors stripped). */
struct rdma_qos_osmp_group {
  uint8_t mgid[16]; /* network order, as on the wire */
  uint16_t mlid;
  uint16_t pkey;
  uint8_t sl;
  uint8_t mtu;
  uint8_t rate;
  uint8_t packet_life;
};

rdma_qos_osmp_builder* rdma_qos_osmp_builder_new(void);
void rdma_qos_osmp_builder_free(rdma_qos_osmp_builder* builder);
void rdma_qos_osmp_builder_subnet(rdma_qos_osmp_builder* builder, uint64_t sm_port_guid);
/* The routing engine that routed the subnet (OpenSM's name for it; NULL: none yet), whether it
 * assigns path SLs (path_sl) and whether it programs SL2VL / VLArb tables itself. */
void rdma_qos_osmp_builder_routing(rdma_qos_osmp_builder* builder, const char* engine,
                                   int assigns_sl, int programs_sl2vl);
/* A node (type 1 CA, 2 switch, 3 router) with ports 0..num_ports; returns its index. */
int rdma_qos_osmp_builder_node(rdma_qos_osmp_builder* builder, uint64_t guid, uint8_t type,
                               const char* description, uint8_t num_ports);
void rdma_qos_osmp_builder_port(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                const struct rdma_qos_osmp_port* info);
/* One PKey table entry (network order already converted; zero entries are skipped). */
void rdma_qos_osmp_builder_pkey(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                uint16_t pkey);
/* The SL2VL table of output `port` for input `in_port` (CA ports: 0), as the 8 bytes of the
 * SLtoVLMappingTable attribute. */
void rdma_qos_osmp_builder_sl2vl(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                 uint8_t in_port, const uint8_t raw[8]);
/* OpenSM's live multicast groups follow (none, if no rdma_qos_osmp_builder_group follows): they
 * replace the IPoIB groups the engine would otherwise derive from the partitions file. */
void rdma_qos_osmp_builder_groups_known(rdma_qos_osmp_builder* builder);
/* One live multicast group. */
void rdma_qos_osmp_builder_group(rdma_qos_osmp_builder* builder,
                                 const struct rdma_qos_osmp_group* group);
/* An alias GUID OpenSM holds for the port `port_guid` (both host order); the port's own GUID
 * need not be given. */
void rdma_qos_osmp_builder_alias(rdma_qos_osmp_builder* builder, uint64_t port_guid,
                                 uint64_t alias_guid);
/* OpenSM's options that shape its records: use_original_extended_sa_rates_only (read at every
 * snapshot: OpenSM may re-read it). */
void rdma_qos_osmp_builder_options(rdma_qos_osmp_builder* builder,
                                   int original_extended_rates_only);
/* A switch's linear forwarding table, DLID 0..top. */
void rdma_qos_osmp_builder_lft(rdma_qos_osmp_builder* builder, int node, const uint8_t* lft,
                               size_t entries);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_QOS_OPENSM_PLUGIN_PLUGIN_H */
