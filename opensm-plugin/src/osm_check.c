// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The version and layout checks of osm_check.h. They read only fields whose values OpenSM
 * sets to known addresses, so a mismatch shows as a wrong pointer, not as a crash. */
#include "osm_check.h"

#include <stdio.h>
#include <string.h>

int rdma_qos_osmp_check_opensm(const osm_opensm_t* osm, const char* version, const void* pr,
                               const void* mpr, char* why, size_t why_len) {
  const osm_sa_t* sa;
  const cl_disp_reg_info_t* reg;

  if (!osm) {
    snprintf(why, why_len, "no OpenSM object");
    return -1;
  }
  /* osm_version is the first field: safe to read whatever the rest looks like. */
  if (!osm->osm_version || strcmp(osm->osm_version, version) != 0) {
    snprintf(why, why_len, "built for %s, running in %s", version,
             osm->osm_version ? osm->osm_version : "(no version)");
    return -1;
  }
  if (osm->subn.p_osm != osm) {
    snprintf(why, why_len, "osm_subn_t layout differs (p_osm)");
    return -1;
  }
  sa = &osm->sa;
  if (sa->sm != &osm->sm || sa->p_subn != &osm->subn || sa->p_log != &osm->log ||
      sa->p_disp != &osm->disp || sa->p_lock != &osm->lock || sa->p_mad_pool != &osm->mad_pool) {
    snprintf(why, why_len, "osm_opensm_t / osm_sa_t layout differs");
    return -1;
  }
  if (!pr || !mpr) {
    snprintf(why, why_len, "OpenSM does not export %s",
             !pr ? "osm_pr_rcv_process" : "osm_mpr_rcv_process");
    return -1;
  }
  reg = sa->pr_disp_h;
  if (reg == CL_DISP_INVALID_HANDLE || (const void*)reg->pfn_rcv_callback != pr ||
      reg->context != sa || reg->msg_id != OSM_MSG_MAD_PATH_RECORD) {
    snprintf(why, why_len, "the PathRecord handler is not OpenSM's own");
    return -1;
  }
  reg = sa->mpr_disp_h;
  if (reg == CL_DISP_INVALID_HANDLE || (const void*)reg->pfn_rcv_callback != mpr ||
      reg->context != sa || reg->msg_id != OSM_MSG_MAD_MULTIPATH_RECORD) {
    snprintf(why, why_len, "the MultiPathRecord handler is not OpenSM's own");
    return -1;
  }
  return 0;
}
