// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* One client connection to ibsim: attached to a named node, it carries MADs in and out of that
 * node's first port and answers questions about it. ibsim's client protocol is described in
 * Documentation/testing.md ("ibsim's client protocol"). */
#pragma once

#include <stdint.h>

/* A MAD as ibsim carries it: the LIDs and QPs in network order in the low bytes of each word
 * (ibsim reads the LIDs with ntohs), the status ibsim sets when it drops the MAD (110,
 * ETIMEDOUT), the MAD's length and at most 256 bytes of it. */
struct ibsim_mad {
  uint32_t dlid;
  uint32_t slid; /* 0: ibsim fills in the LID of the client's port */
  uint32_t dqp;
  uint32_t sqp;
  uint32_t status;
  uint64_t length;
  uint8_t mad[256];
};

struct ibsim_link {
  int ctl_fd;      /* connected to ibsim's control socket */
  int data_fd;     /* connected to ibsim's socket for this client: one datagram per MAD */
  uint32_t client; /* ibsim's index of this client (0..9), also the top 16 bits of its TIDs */
};

/* Attaches a new client at `node` (ibsim's node id or NodeDescription) of the simulator whose
 * sockets are named after `sockname`. 0 or -errno. */
int ibsim_link_open(struct ibsim_link* link, const char* sockname, const char* node);
/* Detaches the client and closes its sockets. */
void ibsim_link_close(struct ibsim_link* link);

/* The attached port's PortInfo, the node's NodeInfo and the port's P_Key table (32 entries,
 * network order), as ibsim keeps them now. 0 or -errno. */
int ibsim_link_port_info(struct ibsim_link* link, uint8_t portinfo[64]);
int ibsim_link_node_info(struct ibsim_link* link, uint8_t nodeinfo[64]);
int ibsim_link_pkeys(struct ibsim_link* link, uint16_t pkeys[32]);
