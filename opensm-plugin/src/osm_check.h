// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The checks the plugin makes before it touches OpenSM's structures: the version string and
 * the layout of what it reads and changes (osm_opensm_t, osm_sa_t, the dispatcher's
 * registrations), verified through pointers OpenSM set up itself. */
#ifndef RDMA_QOS_OPENSM_PLUGIN_OSM_CHECK_H
#define RDMA_QOS_OPENSM_PLUGIN_OSM_CHECK_H

#include <stddef.h>

#include <opensm/osm_config.h>
#include <opensm/osm_opensm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when `osm` is an OpenSM the plugin can work with: its version string is `version`, the SA
 * points at the subnet, log, dispatcher, lock and MAD pool of this very osm_opensm_t, and the
 * PathRecord / MultiPathRecord registrations hold OpenSM's handlers `pr` and `mpr` with the SA
 * as context. Otherwise -1, and `why` (of `why_len` bytes) says what differs. */
int rdma_qos_osmp_check_opensm(const osm_opensm_t* osm, const char* version, const void* pr,
                               const void* mpr, char* why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
