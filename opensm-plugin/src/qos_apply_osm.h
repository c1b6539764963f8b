// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The plugin's qos-setup hook, called from its event handler with every event (see
 * qos_apply_osm.c). */
#ifndef RDMA_QOS_OPENSM_PLUGIN_QOS_APPLY_OSM_H
#define RDMA_QOS_OPENSM_PLUGIN_QOS_APPLY_OSM_H

#include <opensm/osm_opensm.h>

#include "rdma-qos/opensm-plugin/plugin.h"

void rdma_qos_qa_on_event(osm_opensm_t* osm, rdma_qos_osmp* plugin, int event_id);
/* Frees the qos-setup state, before the plugin's engine (whose policy files it reads) goes. */
void rdma_qos_qa_on_destroy(void);

#endif
