// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A fake osm_opensm_t as OpenSM 3.3.23 sets it up before loading plugins, for the layout check's
 * unit tests (the check's inputs are OpenSM's structures, built here in C). */
#include "fake_opensm.h"

#include <stdlib.h>

#include <opensm/osm_config.h>
#include <opensm/osm_opensm.h>

void fake_pr(void* context, void* data) {
  (void)context;
  (void)data;
}

void fake_mpr(void* context, void* data) {
  (void)context;
  (void)data;
}

struct fake_opensm {
  osm_opensm_t osm;
  cl_disp_reg_info_t pr, mpr;
};

struct fake_opensm* fake_opensm_new(const char* version) {
  struct fake_opensm* f = calloc(1, sizeof(*f));

  f->osm.osm_version = version;
  f->osm.subn.p_osm = &f->osm;
  f->osm.sa.sm = &f->osm.sm;
  f->osm.sa.p_subn = &f->osm.subn;
  f->osm.sa.p_log = &f->osm.log;
  f->osm.sa.p_disp = &f->osm.disp;
  f->osm.sa.p_lock = &f->osm.lock;
  f->osm.sa.p_mad_pool = &f->osm.mad_pool;
  f->pr.pfn_rcv_callback = fake_pr;
  f->pr.context = &f->osm.sa;
  f->pr.msg_id = OSM_MSG_MAD_PATH_RECORD;
  f->mpr.pfn_rcv_callback = fake_mpr;
  f->mpr.context = &f->osm.sa;
  f->mpr.msg_id = OSM_MSG_MAD_MULTIPATH_RECORD;
  f->osm.sa.pr_disp_h = &f->pr;
  f->osm.sa.mpr_disp_h = &f->mpr;
  return f;
}

void fake_opensm_free(struct fake_opensm* f) {
  free(f);
}

const void* fake_opensm_osm(const struct fake_opensm* f) {
  return &f->osm;
}

void fake_opensm_break_sa_subnet(struct fake_opensm* f) {
  f->osm.sa.p_subn = NULL;
}

void fake_opensm_replace_pr_handler(struct fake_opensm* f) {
  f->pr.pfn_rcv_callback = fake_mpr;
}

void fake_opensm_drop_mpr_handler(struct fake_opensm* f) {
  f->osm.sa.mpr_disp_h = CL_DISP_INVALID_HANDLE;
}
