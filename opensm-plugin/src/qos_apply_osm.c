// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The OpenSM side of qos_apply.h: at the start of each heavy sweep, look at the policy again (it is
 * read only when it changed, and parsed once with the engine's) and make sure OpenSM's routing
 * engines carry the plugin's update_sl2vl / update_vlarb callbacks. OpenSM
 * then computes its per-class table, lets the callback replace it where a qos-setup scope selects
 * the port, cuts it to the port, compares it with its cache and sends it only when it differs:
 * the tables are written by OpenSM alone, at the same point of every sweep. */
#include <opensm/osm_config.h> /* first: it sets the options that shape osm_opensm_t */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <opensm/osm_event_plugin.h>
#include <opensm/osm_log.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_partition.h>
#include <opensm/osm_pkey.h>
#include <opensm/osm_port.h>

#include "qos_apply.h"
#include "qos_apply_osm.h"

/* One OpenSM per process, one plugin instance in it: the callbacks carry the routing engine's
 * context, not ours, so the state is the module's. */
static rdma_qos_qa* g_qa;
static int g_active; /* scopes in force */
static osm_opensm_t* g_osm;
static int g_partitions_due; /* the partition names are resolved again, once per heavy sweep */

/* A line of qos_apply.cpp for OpenSM's log: errors as errors, the rest (warnings among them)
 * as information, which OpenSM's default log level shows. */
static void say(void* ctx, int error, const char* line) {
  osm_opensm_t* osm = ctx;

  osm_log(&osm->log, error ? OSM_LOG_ERROR : OSM_LOG_INFO, "rdma-qos plugin: %s\n", line);
}

/* Hands OpenSM's partition table (name, P_Key) to the scopes, when a scope names a partition
 * group. Called from the first table callback of a heavy sweep: the partition manager has built
 * the table earlier in the sweep (at the sweep's start it may still be the previous one, or
 * empty), and OpenSM holds its lock while it programs QoS, so nobody changes it meanwhile. */
static void resolve_partitions(void) {
  const cl_qmap_t* tbl;
  const cl_map_item_t* it;
  const char** names;
  char(*copies)[sizeof(((osm_prtn_t*)0)->name) + 1]; /* the names, surely NUL-terminated */
  uint16_t* pkeys;
  size_t n = 0, count;

  if (!g_partitions_due || !g_osm) return;
  g_partitions_due = 0;
  if (!rdma_qos_qa_needs_partitions(g_qa)) return;
  tbl = &g_osm->subn.prtn_pkey_tbl;
  count = cl_qmap_count(tbl);
  names = calloc(count + 1, sizeof(*names));
  copies = calloc(count + 1, sizeof(*copies));
  pkeys = calloc(count + 1, sizeof(*pkeys));
  if (names && copies && pkeys) {
    for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && n < count; it = cl_qmap_next(it)) {
      const osm_prtn_t* p = (const osm_prtn_t*)it; /* map_item is its first member */
      memcpy(copies[n], p->name, sizeof(p->name));
      names[n] = copies[n];
      pkeys[n++] = cl_ntoh16(p->pkey) & 0x7FFF;
    }
    rdma_qos_qa_set_partitions(g_qa, names, pkeys, n);
  }
  free(names);
  free(copies);
  free(pkeys);
}

/* The P_Keys of the table OpenSM holds for `p` (the blocks it last read from the port or set
 * on it; by the QoS step of a sweep the partition manager's Sets have been answered); a switch
 * is a member through its port 0. Only when a scope names a pkey group; out of memory, none. */
static void describe_pkeys(struct rdma_qos_qa_port* out, osm_physp_t* p) {
  osm_node_t* n = osm_physp_get_node_ptr(p);
  const osm_pkey_tbl_t* tbl;
  uint16_t* keys;
  uint16_t b, blocks;
  size_t count = 0;
  int i;

  out->pkeys = NULL;
  out->num_pkeys = 0;
  if (!rdma_qos_qa_needs_pkeys(g_qa)) return;
  if (osm_node_get_type(n) == IB_NODE_TYPE_SWITCH) p = osm_node_get_physp_ptr(n, 0);
  if (!p) return;
  tbl = osm_physp_get_pkey_tbl(p);
  blocks = osm_pkey_tbl_get_num_blocks(tbl);
  if (blocks == 0) return;
  keys = malloc((size_t)blocks * IB_NUM_PKEY_ELEMENTS_IN_BLOCK * sizeof(*keys));
  if (!keys) return;
  for (b = 0; b < blocks; b++) {
    const ib_pkey_table_t* block = osm_pkey_tbl_block_get(tbl, b);
    if (!block) continue;
    for (i = 0; i < IB_NUM_PKEY_ELEMENTS_IN_BLOCK; i++) {
      uint16_t key = cl_ntoh16(block->pkey_entry[i]) & 0x7FFF;
      if (key) keys[count++] = key;
    }
  }
  out->pkeys = keys;
  out->num_pkeys = count;
}

static void describe(struct rdma_qos_qa_port* out, osm_physp_t* p) {
  osm_node_t* n = osm_physp_get_node_ptr(p);

  out->node_guid = cl_ntoh64(osm_node_get_node_guid(n));
  out->port_guid = cl_ntoh64(osm_physp_get_port_guid(p));
  out->node_type = osm_node_get_type(n);
  out->port = osm_physp_get_port_num(p);
  out->description = n->print_desc ? n->print_desc : "";
  describe_pkeys(out, p);
}

/* What describe() allocated. */
static void release(struct rdma_qos_qa_port* port) {
  free((void*)port->pkeys);
  port->pkeys = NULL;
  port->num_pkeys = 0;
}

/* The port linked to `p`, when there is one. */
static int describe_peer(struct rdma_qos_qa_port* out, osm_physp_t* p) {
  osm_physp_t* r;

  if (!p) return 0;
  r = osm_physp_get_remote(p); /* a switch's port 0 has none */
  if (!r) return 0;
  describe(out, r);
  return 1;
}

static void hook_sl2vl(void* context, osm_physp_t* port, uint8_t in_port, uint8_t out_port,
                       ib_slvl_table_t* t) {
  struct rdma_qos_qa_port out, out_peer, in_peer;
  osm_node_t* node;
  osm_physp_t* in = NULL;
  uint8_t vl[16];
  int has_out_peer, has_in_peer = 0, chosen, i;

  (void)context;
  (void)out_port;
  if (!g_active || !port) return;
  resolve_partitions();
  describe(&out, port);
  has_out_peer = describe_peer(&out_peer, port);
  node = osm_physp_get_node_ptr(port);
  if (in_port != 0 && osm_node_get_type(node) == IB_NODE_TYPE_SWITCH)
    in = osm_node_get_physp_ptr(node, in_port);
  if (in) has_in_peer = describe_peer(&in_peer, in);
  chosen = rdma_qos_qa_sl2vl(g_qa, &out, has_out_peer ? &out_peer : NULL, in_port,
                             has_in_peer ? &in_peer : NULL, vl);
  release(&out);
  if (has_out_peer) release(&out_peer);
  if (has_in_peer) release(&in_peer);
  if (!chosen) return;
  for (i = 0; i < 8; i++)
    t->raw_vl_by_sl[i] = (uint8_t)((vl[2 * i] & 0xF) << 4 | (vl[2 * i + 1] & 0xF));
}

static void hook_vlarb(void* context, osm_physp_t* port, uint8_t port_num, ib_vl_arb_table_t* block,
                       unsigned block_length, unsigned block_num) {
  struct rdma_qos_qa_port self, peer;
  uint8_t vl[IB_NUM_VL_ARB_ELEMENTS_IN_BLOCK], weight[IB_NUM_VL_ARB_ELEMENTS_IN_BLOCK];
  int has_peer, high_limit, chosen;
  unsigned i;

  (void)context;
  (void)port_num;
  if (!g_active || !port || block_length > IB_NUM_VL_ARB_ELEMENTS_IN_BLOCK) return;
  resolve_partitions();
  describe(&self, port);
  has_peer = describe_peer(&peer, port);
  /* Blocks 0 and 1 are the low-priority table, 2 and 3 the high one (osm_qos.c). */
  chosen = rdma_qos_qa_vlarb(g_qa, &self, has_peer ? &peer : NULL, block_num >= 2,
                             (block_num % 2) * IB_NUM_VL_ARB_ELEMENTS_IN_BLOCK, block_length, vl,
                             weight, &high_limit);
  release(&self);
  if (has_peer) release(&peer);
  if (chosen) {
    for (i = 0; i < block_length; i++) {
      block->vl_entry[i].vl = vl[i];
      block->vl_entry[i].weight = weight[i];
    }
  }
  /* OpenSM set the class's limit just before; the link manager sends it with PortInfo. */
  if (high_limit >= 0) port->vl_high_limit = (uint8_t)high_limit;
}

/* Engines that assign SLs or VL layers keep OpenSM's own tables: torus-2QoS programs SL2VL
 * itself, and LASH, DFSSSP and Nue give each path the SL of its deadlock-free layer
 * (path_sl) and rely on OpenSM's SL-to-VL map to keep the layers apart; a policy table that
 * merged two of those SLs onto one VL could close a credit loop. Said once per engine. */
static void install(osm_opensm_t* osm, struct osm_routing_engine* re) {
  if (!re) return;
  if (re->update_sl2vl == hook_sl2vl && re->update_vlarb == hook_vlarb) return;
  if (rdma_qos_qa_engine_keeps_tables(re->update_sl2vl != NULL, re->update_vlarb != NULL,
                                      re->path_sl != NULL)) {
    if (rdma_qos_qa_note_skipped(g_qa, re->name ? re->name : "?"))
      osm_log(&osm->log, OSM_LOG_ERROR,
              "rdma-qos plugin: routing engine %s assigns SLs or programs SL2VL/VLArb itself: "
              "qos-setup is not applied while it routes (OpenSM's own tables stay)\n",
              re->name ? re->name : "?");
    return;
  }
  re->update_sl2vl = hook_sl2vl;
  re->update_vlarb = hook_vlarb;
}

void rdma_qos_qa_on_event(osm_opensm_t* osm, rdma_qos_osmp* plugin, int event_id) {
  struct osm_routing_engine* re;
  int r;

  if (event_id != OSM_EVENT_ID_HEAVY_SWEEP_START) return;
  if (!g_qa) g_qa = rdma_qos_qa_new(plugin, say, osm);
  if (!g_qa) return;
  r = rdma_qos_qa_load(g_qa, cl_ntoh64(osm->subn.sm_port_guid), osm->subn.opt.qos);
  if (r >= 0) g_active = r;
  g_osm = osm;
  g_partitions_due = 1;
  if (!g_active) return;
  for (re = osm->routing_engine_list; re; re = re->next) install(osm, re);
  install(osm, osm->default_routing_engine);
}

/* The plugin is going away: so is its qos-setup state. */
void rdma_qos_qa_on_destroy(void) {
  rdma_qos_qa_free(g_qa);
  g_qa = NULL;
  g_active = 0;
}
