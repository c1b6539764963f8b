// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* The host the process plays: its devices and ports, each port backed by an ibsim node, read
 * once from UMAD_MULTI_CA ("DEVICE/PORT=NODE ...", e.g. "mlx5_0/1=node001 mlx5_1/1=node002"). */
#pragma once

#include <infiniband/umad.h>

struct host_port {
  char device[UMAD_CA_NAME_LEN];
  int port;
  char node[32]; /* the ibsim node (id or NodeDescription) whose first port this port is */
};

/* Parses a layout "DEVICE/PORT=NODE ..." (entries separated by blanks; PORT 1-9, the ports
 * libibumad's umad_ca_t holds) into `out`:
 * the number of ports, or -1 if an entry is malformed, names a port twice or is one too many. */
int host_layout_parse(const char* text, struct host_port* out, int max);

/* Every configured port, in the order given; NULL and *count 0 when UMAD_MULTI_CA is unset or
 * malformed (the reason goes to stderr once). */
const struct host_port* host_ports(int* count);
/* The port `port` of `device` (NULL: the first device); NULL if not configured. */
const struct host_port* host_port_find(const char* device, int port);
/* The number of ports of `device`: its highest configured port number, 0 if unknown. */
int host_port_count(const char* device);
/* The simulator's socket name (IBSIM_SOCKNAME, default "sim"). */
const char* host_sockname(void);
