// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The OpenSM event plugin: checks the OpenSM it is loaded into, puts rdma-qos's answer engine
 * in place of the SA's PathRecord and MultiPathRecord handlers, and feeds the engine OpenSM's
 * subnet whenever a sweep or routing pass ends. Everything else stays OpenSM's. */
#include <opensm/osm_config.h> /* first: it sets the options that shape osm_opensm_t */

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <opensm/osm_event_plugin.h>
#include <opensm/osm_log.h>
#include <opensm/osm_mad_pool.h>
#include <opensm/osm_madw.h>
#include <opensm/osm_multicast.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_pkey.h>
#include <opensm/osm_port.h>
#include <opensm/osm_sa.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>

#include "osm_check.h"
#include "qos_apply_osm.h"
#include "rdma-qos/opensm-plugin/plugin.h"

typedef void (*rcv_fn)(void* context, void* data);
typedef ib_api_status_t (*sa_send_fn)(osm_sa_t* sa, osm_madw_t* madw, boolean_t resp_expected);

struct plugin {
  osm_opensm_t* osm;
  rdma_qos_osmp* engine;
  rcv_fn pr, mpr; /* OpenSM's own handlers: the fallback */
  rcv_fn gir;     /* OpenSM's GUIDInfoRecord handler, which we follow */
  sa_send_fn sa_send;
  volatile unsigned int* exit_flag;
  cl_disp_reg_handle_t pr_h, mpr_h, gir_h;
};

static void say(void* ctx, int error, const char* line) {
  struct plugin* p = ctx;

  osm_log(&p->osm->log, error ? OSM_LOG_ERROR : OSM_LOG_INFO, "rdma-qos plugin: %s\n", line);
}

/* Before the layout is known to be right, OpenSM's log cannot be trusted: stderr and syslog. */
static void refuse(const char* why) {
  fprintf(stderr, "rdma-qos plugin: not loaded (%s): OpenSM's own SA handlers answer\n", why);
  syslog(LOG_ERR, "rdma-qos plugin: not loaded (%s): OpenSM's own SA handlers answer", why);
}

/* Where a response goes: plain data, which the engine copies when one of its answer threads
 * sends the response after the dispatcher thread returned (and OpenSM put the request's MAD back
 * in its pool). The bind handle lives until OpenSM deletes its vendor layer, after the plugin's
 * delete: OpenSM's SA shutdown only unbinds it, as for its own handlers still answering. */
struct reply {
  struct plugin* p;
  osm_bind_handle_t h_bind;
  osm_mad_addr_t addr;
};

/* OpenSM's own response path: a MAD from its pool, addressed to the requester, sent by
 * osm_sa_send (the vendor layer does RMPP for answers longer than one MAD). Thread-safe, as for
 * OpenSM's own handlers on its several dispatcher threads. */
static void send_response(const void* ctx, const uint8_t* mad, size_t len) {
  const struct reply* r = ctx;
  osm_madw_t* resp;

  if (*r->p->exit_flag) return;
  resp = osm_mad_pool_get(r->p->osm->sa.p_mad_pool, r->h_bind, (uint32_t)len, &r->addr);
  if (!resp) {
    say(r->p, 1, "no MAD for a response (OpenSM's pool is exhausted)");
    return;
  }
  memcpy(osm_madw_get_mad_ptr(resp), mad, len);
  r->p->sa_send(&r->p->osm->sa, resp, FALSE);
}

static void answer(struct plugin* p, osm_madw_t* madw, rcv_fn fallback) {
  struct reply r;
  const uint8_t* mad = (const uint8_t*)osm_madw_get_mad_ptr(madw);

  if (*p->exit_flag) return;
  memset(&r, 0, sizeof(r));
  r.p = p;
  r.h_bind = madw->h_bind;
  r.addr = madw->mad_addr;
  if (rdma_qos_osmp_answer(p->engine, mad, madw->mad_size, cl_ntoh16(madw->mad_addr.dest_lid),
                           send_response, &r, sizeof(r)) == RDMA_QOS_OSMP_FALLBACK)
    fallback(&p->osm->sa, madw);
}

static void pr_rcv(void* context, void* data) {
  struct plugin* p = context;

  answer(p, data, p->pr);
}

static void mpr_rcv(void* context, void* data) {
  struct plugin* p = context;

  answer(p, data, p->mpr);
}

/* GUIDInfoRecord stays OpenSM's; a SubnAdmSet or SubnAdmDelete may add or remove alias GUIDs
 * (an SR-IOV virtual function's), which change OpenSM's PathRecords for that port at once, so a
 * new model is asked for right after OpenSM's handler ran. */
static void gir_rcv(void* context, void* data) {
  struct plugin* p = context;
  const ib_mad_t* mad = osm_madw_get_mad_ptr((osm_madw_t*)data);
  const int changes = mad->method == IB_MAD_METHOD_SET || mad->method == IB_MAD_METHOD_DELETE;

  p->gir(&p->osm->sa, data);
  if (changes && !*p->exit_flag) rdma_qos_osmp_refresh(p->engine);
}

static void copy_port(rdma_qos_osmp_builder* b, int node, uint8_t num, const osm_physp_t* physp) {
  const ib_port_info_t* pi = &physp->port_info;
  struct rdma_qos_osmp_port info;
  uint16_t block, n_blocks, i;
  size_t in, n_sl2vl;

  memset(&info, 0, sizeof(info));
  info.guid = cl_ntoh64(physp->port_guid);
  info.base_lid = cl_ntoh16(pi->base_lid);
  info.lmc = ib_port_info_get_lmc(pi);
  info.mtu_cap = ib_port_info_get_mtu_cap(pi);
  info.link_width_active = pi->link_width_active;
  info.link_speed_active = ib_port_info_get_link_speed_active(pi);
  info.link_speed_ext_active = ib_port_info_get_link_speed_ext_active(pi);
  info.port_state = ib_port_info_get_port_state(pi);
  info.capability_mask = cl_ntoh32(pi->capability_mask);
  info.capability_mask2 = cl_ntoh16(pi->capability_mask2);
  info.subnet_prefix = cl_ntoh64(pi->subnet_prefix);
  if (physp->p_remote_physp && physp->p_remote_physp->p_node) {
    info.peer_node_guid = cl_ntoh64(physp->p_remote_physp->p_node->node_info.node_guid);
    info.peer_port = physp->p_remote_physp->port_num;
  }
  rdma_qos_osmp_builder_port(b, node, num, &info);

  n_blocks = (uint16_t)cl_ptr_vector_get_size(&physp->pkeys.blocks);
  for (block = 0; block < n_blocks; block++) {
    const ib_pkey_table_t* t = osm_pkey_tbl_block_get(&physp->pkeys, block);

    if (!t) continue;
    for (i = 0; i < IB_NUM_PKEY_ELEMENTS_IN_BLOCK; i++)
      rdma_qos_osmp_builder_pkey(b, node, num, cl_ntoh16(t->pkey_entry[i]));
  }
  n_sl2vl = cl_ptr_vector_get_size(&physp->slvl_by_port);
  for (in = 0; in < n_sl2vl && in < 256; in++) {
    const ib_slvl_table_t* t = cl_ptr_vector_get(&physp->slvl_by_port, in);

    if (t) rdma_qos_osmp_builder_sl2vl(b, node, num, (uint8_t)in, t->raw_vl_by_sl);
  }
}

/* OpenSM's live multicast groups: a PathRecord to a group is OpenSM's answer from these. */
static void copy_groups(rdma_qos_osmp_builder* b, osm_subn_t* subn) {
  cl_fmap_item_t* item;

  rdma_qos_osmp_builder_groups_known(b);
  for (item = cl_fmap_head(&subn->mgrp_mgid_tbl); item != cl_fmap_end(&subn->mgrp_mgid_tbl);
       item = cl_fmap_next(item)) {
    const osm_mgrp_t* g = (const osm_mgrp_t*)item; /* map_item is its first member */
    const ib_member_rec_t* r = &g->mcmember_rec;
    struct rdma_qos_osmp_group out;

    memcpy(out.mgid, r->mgid.raw, sizeof(out.mgid));
    out.mlid = cl_ntoh16(g->mlid);
    out.pkey = cl_ntoh16(r->pkey);
    out.sl = (uint8_t)(cl_ntoh32(r->sl_flow_hop) >> 28);
    out.mtu = r->mtu & 0x3F;
    out.rate = r->rate & 0x3F;
    out.packet_life = r->pkt_life & 0x3F;
    rdma_qos_osmp_builder_group(b, &out);
  }
}

/* The alias GUIDs of ports (SR-IOV virtual functions' GUIDs): OpenSM's answers for such a port
 * may carry an alias, so the engine leaves its queries to OpenSM. */
static void copy_aliases(rdma_qos_osmp_builder* b, osm_subn_t* subn) {
  cl_map_item_t* item;

  for (item = cl_qmap_head(&subn->alias_port_guid_tbl);
       item != cl_qmap_end(&subn->alias_port_guid_tbl); item = cl_qmap_next(item)) {
    const osm_alias_guid_t* a = (const osm_alias_guid_t*)item; /* map_item is its first member */

    if (a->p_base_port && a->alias_guid != a->p_base_port->guid)
      rdma_qos_osmp_builder_alias(b, cl_ntoh64(a->p_base_port->guid), cl_ntoh64(a->alias_guid));
  }
}

/* Copies what the engine needs under OpenSM's lock (read side: SA queries go on, a sweep waits
 * only for this copy); the model is built from the copy outside the lock. */
static int snapshot(void* ctx, rdma_qos_osmp_builder* b) {
  struct plugin* p = ctx;
  osm_subn_t* subn = &p->osm->subn;
  const struct osm_routing_engine* re;
  cl_map_item_t* item;

  if (*p->exit_flag) return -1;
  cl_plock_acquire(&p->osm->lock);
  rdma_qos_osmp_builder_options(b, subn->opt.use_original_extended_sa_rates_only ? 1 : 0);
  copy_groups(b, subn);
  copy_aliases(b, subn);
  rdma_qos_osmp_builder_subnet(b, cl_ntoh64(subn->sm_port_guid));
  re = p->osm->routing_engine_used;
  if (re)
    rdma_qos_osmp_builder_routing(b, re->name, re->path_sl != NULL,
                                  re->update_sl2vl != NULL || re->update_vlarb != NULL);
  for (item = cl_qmap_head(&subn->node_guid_tbl); item != cl_qmap_end(&subn->node_guid_tbl);
       item = cl_qmap_next(item)) {
    osm_node_t* node = (osm_node_t*)item;
    uint8_t n = osm_node_get_num_physp(node), port;
    char desc[IB_NODE_DESCRIPTION_SIZE + 1];
    int index;

    memcpy(desc, node->node_desc.description, IB_NODE_DESCRIPTION_SIZE);
    desc[IB_NODE_DESCRIPTION_SIZE] = '\0';
    index = rdma_qos_osmp_builder_node(b, cl_ntoh64(osm_node_get_node_guid(node)),
                                       osm_node_get_type(node), desc, (uint8_t)(n > 0 ? n - 1 : 0));
    for (port = 0; port < n; port++) {
      osm_physp_t* physp = osm_node_get_physp_ptr(node, port);

      if (physp) copy_port(b, index, port, physp);
    }
    if (node->sw && node->sw->lft) {
      size_t top = cl_ntoh16(node->sw->switch_info.lin_top);

      if (top > node->sw->max_lid_ho) top = node->sw->max_lid_ho;
      rdma_qos_osmp_builder_lft(b, index, node->sw->lft, top + 1);
    }
  }
  cl_plock_release(&p->osm->lock);
  return 0;
}

/* The routing engine's SL for a path, asked as OpenSM's own PathRecord handler asks it: with
 * the SL chosen so far as the hint, under OpenSM's lock (read side), so that a routing pass
 * (write side) never changes the engine's tables under the call. */
static int path_sl(void* ctx, uint8_t hint, uint16_t slid, uint16_t dlid) {
  struct plugin* p = ctx;
  struct osm_routing_engine* re;
  int sl = -1;

  if (*p->exit_flag) return -1;
  cl_plock_acquire(&p->osm->lock);
  re = p->osm->routing_engine_used;
  if (re && re->path_sl) sl = re->path_sl(re->context, hint, cl_hton16(slid), cl_hton16(dlid));
  cl_plock_release(&p->osm->lock);
  return sl;
}

/* Puts `rcv` in place of OpenSM's handler for `msg_id` on dispatcher `disp`; on failure
 * OpenSM's comes back. */
static int swap_handler(struct plugin* p, cl_dispatcher_t* disp, cl_disp_reg_handle_t* slot,
                        cl_disp_msgid_t msg_id, cl_pfn_msgrcv_cb_t rcv, rcv_fn own,
                        cl_disp_reg_handle_t* ours) {
  cl_disp_unregister(*slot);
  *ours = cl_disp_register(disp, msg_id, rcv, p);
  if (*ours == CL_DISP_INVALID_HANDLE) {
    *slot = cl_disp_register(disp, msg_id, own, &p->osm->sa);
    return -1;
  }
  /* OpenSM's SA shutdown unregisters whatever this slot holds: ours, from now on. */
  *slot = *ours;
  return 0;
}

static void* create(osm_opensm_t* osm) {
  struct plugin* p;
  struct rdma_qos_osmp_osm_config config;
  char why[256];
  const osm_subn_opt_t* opt;
  void* pr = dlsym(RTLD_DEFAULT, "osm_pr_rcv_process");
  void* mpr = dlsym(RTLD_DEFAULT, "osm_mpr_rcv_process");

  if (rdma_qos_osmp_check_opensm(osm, OSM_VERSION, pr, mpr, why, sizeof(why)) != 0) {
    refuse(why);
    return NULL;
  }
  p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->osm = osm;
  p->pr = (rcv_fn)pr;
  p->mpr = (rcv_fn)mpr;
  p->sa_send = (sa_send_fn)dlsym(RTLD_DEFAULT, "osm_sa_send");
  p->exit_flag = dlsym(RTLD_DEFAULT, "osm_exit_flag");
  if (!p->sa_send || !p->exit_flag) {
    say(p, 1,
        "not loaded: OpenSM does not export osm_sa_send / osm_exit_flag; OpenSM's "
        "own SA handlers answer");
    free(p);
    return NULL;
  }

  opt = &osm->subn.opt;
  memset(&config, 0, sizeof(config));
  config.qos_policy_file = opt->qos_policy_file;
  config.qos = opt->qos;
  config.partition_config_file = opt->partition_config_file;
  config.subnet_timeout = opt->subnet_timeout;
  config.sa_key = cl_ntoh64(opt->sa_key);
  p->engine = rdma_qos_osmp_create(opt->event_plugin_options, &config, say, snapshot, path_sl, p);
  if (!p->engine) {
    free(p);
    return NULL;
  }
  if (swap_handler(p, &osm->disp, &osm->sa.pr_disp_h, OSM_MSG_MAD_PATH_RECORD, pr_rcv, p->pr,
                   &p->pr_h) != 0) {
    say(p, 1, "not loaded: cannot register for PathRecord; OpenSM's own SA handlers answer");
    rdma_qos_osmp_destroy(p->engine);
    free(p);
    return NULL;
  }
  if (swap_handler(p, &osm->disp, &osm->sa.mpr_disp_h, OSM_MSG_MAD_MULTIPATH_RECORD, mpr_rcv,
                   p->mpr, &p->mpr_h) != 0) {
    say(p, 1, "MultiPathRecord stays OpenSM's: cannot register for it");
  }
  /* SubnAdmSet and SubnAdmDelete reach OpenSM's handlers through its SA set dispatcher. */
  p->gir = (rcv_fn)dlsym(RTLD_DEFAULT, "osm_gir_rcv_process");
  if (!p->gir || !osm->sa_set_disp_initialized ||
      swap_handler(p, &osm->sa_set_disp, &osm->sa.gir_set_disp_h, OSM_MSG_MAD_GUIDINFO_RECORD,
                   gir_rcv, p->gir, &p->gir_h) != 0) {
    say(p, 1,
        "cannot follow GUIDInfoRecord changes: a new alias GUID reaches the model at the next "
        "sweep");
  }
  say(p, 0,
      "loaded into " OSM_VERSION
      ": PathRecord and MultiPathRecord go to rdma-qos "
      "(OpenSM's own handlers answer until the first model is in force)");
  return p;
}

static void destroy(void* data) {
  struct plugin* p = data;

  /* OpenSM shut its SA and dispatcher down before this: no handler runs any more. */
  rdma_qos_qa_on_destroy();
  rdma_qos_osmp_destroy(p->engine);
  free(p);
}

static void report(void* data, osm_epi_event_id_t event_id, void* event_data) {
  struct plugin* p = data;

  (void)event_data;
  rdma_qos_qa_on_event(p->osm, p->engine, event_id);
  switch (event_id) {
    case OSM_EVENT_ID_SUBNET_UP:
    case OSM_EVENT_ID_UCAST_ROUTING_DONE:
    case OSM_EVENT_ID_STATE_CHANGE: rdma_qos_osmp_refresh(p->engine); break;
    default: break;
  }
}

/* What OpenSM looks up in lib<event_plugin_name>.so. */
osm_event_plugin_t osm_event_plugin = {
    .osm_version = OSM_VERSION,
    .create = create,
    .delete = destroy,
    .report = report,
};
