// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* libibumad's device and port functions for a process that plays a host with several InfiniBand
 * devices and ports on ibsim (test bed only; preloaded instead of umad2sim). Each port of the
 * host layout (host_layout.h) is backed by its own ibsim node; each umad_open_port attaches one
 * ibsim client there, whose data socket is the port's file descriptor, so poll(), fcntl() and
 * close-on-exec work on it as on the kernel's umad device. libibumad's own buffer helpers
 * (umad_size, umad_get_mad, umad_set_addr, ...) are not replaced: they never touch a device.
 * Not simulated: the kernel's send timeouts and retries (a MAD ibsim cannot deliver comes back
 * at once with status ETIMEDOUT), RMPP, and ports' rates (0). UMAD_MULTI_CA_TRACE names a file
 * that gets one line per port opened and per MAD sent, so tests can see which port carried what. */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_layout.h"
#include "ibsim_link.h"

enum { kMaxOpen = 64, kMaxAgents = 32, kPortActive = 4 };

struct agent {
  int in_use;
  uint8_t mgmt_class;
  uint8_t qpn; /* 0 for the SMI classes, 1 for every other (GSI) */
};

struct open_port {
  int fd; /* the ibsim link's data socket; -1: free slot */
  struct ibsim_link link;
  const struct host_port* where;
  struct agent agents[kMaxAgents];
};

static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct open_port open_ports[kMaxOpen];
static int open_ports_ready;

__attribute__((format(printf, 1, 2))) static void trace(const char* fmt, ...) {
  const char* path = getenv("UMAD_MULTI_CA_TRACE");
  FILE* f;
  if (path == NULL || (f = fopen(path, "ae")) == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* Called with open_mutex held. */
static struct open_port* find_open(int fd) {
  if (!open_ports_ready) {
    for (int i = 0; i < kMaxOpen; ++i) open_ports[i].fd = -1;
    open_ports_ready = 1;
  }
  for (int i = 0; i < kMaxOpen; ++i)
    if (open_ports[i].fd == fd) return &open_ports[i];
  return NULL;
}

/* The port's attributes as ibsim has them now, through a short-lived client of its own, and the
 * GUID of the node behind it (network order) if `node_guid` is not NULL. */
static int read_port(const struct host_port* hp, umad_port_t* out, __be64* node_guid) {
  struct ibsim_link link;
  uint8_t portinfo[64], nodeinfo[64];
  uint16_t pkeys[32];
  int rc = ibsim_link_open(&link, host_sockname(), hp->node);
  if (rc < 0) return rc;
  if ((rc = ibsim_link_port_info(&link, portinfo)) == 0 &&
      (rc = ibsim_link_node_info(&link, nodeinfo)) == 0)
    rc = ibsim_link_pkeys(&link, pkeys);
  ibsim_link_close(&link);
  if (rc < 0) return rc;
  memset(out, 0, sizeof(*out));
  snprintf(out->ca_name, sizeof(out->ca_name), "%s", hp->device);
  out->portnum = hp->port;
  out->base_lid = mad_get_field(portinfo, 0, IB_PORT_LID_F);
  out->lmc = mad_get_field(portinfo, 0, IB_PORT_LMC_F);
  out->sm_lid = mad_get_field(portinfo, 0, IB_PORT_SMLID_F);
  out->sm_sl = mad_get_field(portinfo, 0, IB_PORT_SMSL_F);
  out->state = mad_get_field(portinfo, 0, IB_PORT_STATE_F);
  out->phys_state = mad_get_field(portinfo, 0, IB_PORT_PHYS_STATE_F);
  out->capmask = htobe32(mad_get_field(portinfo, 0, IB_PORT_CAPMASK_F));
  out->gid_prefix = htobe64(mad_get_field64(portinfo, 0, IB_PORT_GID_PREFIX_F));
  /* ibsim numbers a CA's port GUIDs from its node GUID: node GUID + port number. */
  const uint64_t guid = mad_get_field64(nodeinfo, 0, IB_NODE_GUID_F);
  out->port_guid = htobe64(guid + mad_get_field(portinfo, 0, IB_PORT_LOCAL_PORT_F));
  if (node_guid != NULL) *node_guid = htobe64(guid);
  out->pkeys_size = 32;
  out->pkeys = calloc(32, sizeof(uint16_t));
  if (out->pkeys == NULL) return -ENOMEM;
  for (int i = 0; i < 32; ++i) out->pkeys[i] = be16toh(pkeys[i]);
  snprintf(out->link_layer, sizeof(out->link_layer), "InfiniBand");
  return 0;
}

/* Port `portnum` of `device`, or with portnum 0 its first active port (its first port if none
 * is active), as libibumad resolves UMAD_ANY_PORT. */
static const struct host_port* resolve(const char* device, int portnum) {
  if (portnum != 0) return host_port_find(device, portnum);
  const struct host_port* first = host_port_find(device, 1);
  if (first == NULL) return NULL;
  for (int p = 1; p <= host_port_count(first->device); ++p) {
    const struct host_port* hp = host_port_find(first->device, p);
    umad_port_t attr;
    if (hp == NULL || read_port(hp, &attr, NULL) < 0) continue;
    free(attr.pkeys);
    if (attr.state == kPortActive) return hp;
  }
  return first;
}

int umad_init(void) {
  return 0;
}

int umad_done(void) {
  return 0;
}

int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max) {
  int n, found = 0;
  const struct host_port* all = host_ports(&n);
  for (int i = 0; i < n && found < max; ++i) {
    int seen = 0;
    for (int j = 0; j < found; ++j) seen |= strcmp(cas[j], all[i].device) == 0;
    if (!seen) snprintf(cas[found++], UMAD_CA_NAME_LEN, "%s", all[i].device);
  }
  return found;
}

int umad_get_port(const char* ca_name, int portnum, umad_port_t* port) {
  const struct host_port* hp = resolve(ca_name, portnum);
  return hp != NULL ? read_port(hp, port, NULL) : -ENODEV;
}

int umad_release_port(umad_port_t* port) {
  free(port->pkeys);
  port->pkeys = NULL;
  return 0;
}

int umad_get_ca(const char* ca_name, umad_ca_t* ca) {
  const struct host_port* first = host_port_find(ca_name, 1);
  if (first == NULL) return -ENODEV;
  memset(ca, 0, sizeof(*ca));
  snprintf(ca->ca_name, sizeof(ca->ca_name), "%s", first->device);
  ca->node_type = 1; /* a CA */
  ca->numports = host_port_count(first->device);
  snprintf(ca->ca_type, sizeof(ca->ca_type), "simulator");
  for (int p = 1; p <= ca->numports; ++p) {
    const struct host_port* hp = host_port_find(first->device, p);
    umad_port_t* attr = calloc(1, sizeof(*attr));
    /* The device's GUID is that of the node behind its port 1. */
    if (hp == NULL || attr == NULL || read_port(hp, attr, p == 1 ? &ca->node_guid : NULL) < 0) {
      free(attr);
      continue;
    }
    ca->ports[p] = attr;
    ca->system_guid = ca->node_guid;
  }
  return 0;
}

int umad_release_ca(umad_ca_t* ca) {
  for (int p = 0; p < UMAD_CA_MAX_PORTS; ++p) {
    if (ca->ports[p] == NULL) continue;
    umad_release_port(ca->ports[p]);
    free(ca->ports[p]);
    ca->ports[p] = NULL;
  }
  return 0;
}

int umad_open_port(const char* ca_name, int portnum) {
  const struct host_port* hp = resolve(ca_name, portnum);
  if (hp == NULL) return -ENODEV;
  struct ibsim_link link;
  int rc = ibsim_link_open(&link, host_sockname(), hp->node);
  if (rc < 0) return rc;
  pthread_mutex_lock(&open_mutex);
  struct open_port* slot = find_open(-1);
  if (slot != NULL) {
    memset(slot, 0, sizeof(*slot));
    slot->fd = link.data_fd;
    slot->link = link;
    slot->where = hp;
  }
  pthread_mutex_unlock(&open_mutex);
  if (slot == NULL) {
    ibsim_link_close(&link);
    return -EMFILE;
  }
  trace("open %s/%d node %s ibsim-client %u fd %d", hp->device, hp->port, hp->node, link.client,
        link.data_fd);
  return link.data_fd;
}

int umad_close_port(int portid) {
  pthread_mutex_lock(&open_mutex);
  struct open_port* p = find_open(portid);
  struct ibsim_link link = {.ctl_fd = -1, .data_fd = -1};
  if (p != NULL) {
    link = p->link;
    p->fd = -1;
  }
  pthread_mutex_unlock(&open_mutex);
  if (p == NULL) return -EINVAL;
  ibsim_link_close(&link);
  return 0;
}

int umad_get_fd(int portid) {
  return portid;
}

int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
                  long method_mask[16 / sizeof(long)]) {
  (void)mgmt_version;
  (void)rmpp_version; /* no RMPP on ibsim: every MAD is one datagram of at most 256 bytes */
  (void)method_mask;
  int id = -EINVAL;
  pthread_mutex_lock(&open_mutex);
  struct open_port* p = find_open(portid);
  for (int i = 0; p != NULL && i < kMaxAgents; ++i) {
    if (p->agents[i].in_use) continue;
    p->agents[i] =
        (struct agent){1, (uint8_t)mgmt_class, mgmt_class == 0x01 || mgmt_class == 0x81 ? 0 : 1};
    id = i;
    break;
  }
  pthread_mutex_unlock(&open_mutex);
  return id;
}

int umad_unregister(int portid, int agentid) {
  int rc = -EINVAL;
  pthread_mutex_lock(&open_mutex);
  struct open_port* p = find_open(portid);
  if (p != NULL && agentid >= 0 && agentid < kMaxAgents && p->agents[agentid].in_use) {
    p->agents[agentid].in_use = 0;
    rc = 0;
  }
  pthread_mutex_unlock(&open_mutex);
  return rc;
}

int umad_send(int portid, int agentid, void* umad, int length, int timeout_ms, int retries) {
  (void)timeout_ms;
  (void)retries;
  const ib_user_mad_t* u = umad;
  struct ibsim_mad m;
  memset(&m, 0, sizeof(m));
  pthread_mutex_lock(&open_mutex);
  struct open_port* p = find_open(portid);
  const int valid = p != NULL && agentid >= 0 && agentid < kMaxAgents && p->agents[agentid].in_use;
  const uint8_t qpn = valid ? p->agents[agentid].qpn : 0;
  const struct host_port* hp = valid ? p->where : NULL;
  pthread_mutex_unlock(&open_mutex);
  if (!valid || length < 24 || length > (int)sizeof(m.mad)) return -EINVAL;
  m.dlid = u->addr.lid; /* network order, as ibsim reads it */
  /* A directed-route SMP (permissive DLID) needs the permissive SLID too: ibsim routes its
   * answer back by the swapped LIDs, and SLID 0 would stand for the client port's LID. */
  if (u->addr.lid == 0xffff) m.slid = 0xffff;
  m.dqp = u->addr.qpn;
  m.sqp = htobe32(qpn);
  m.length = htobe64((uint64_t)length);
  /* The MAD follows libibumad's header, whose size is umad_size(), not sizeof(ib_user_mad_t). */
  memcpy(m.mad, umad_get_mad(umad), (size_t)length);
  if (!(m.mad[3] & 0x80)) {
    /* A request: the agent goes into TID bits 32-47, as the kernel puts its agent into the top
     * half, so the answer finds it; ibsim overwrites bits 48-63 with its client index. */
    uint64_t tid;
    memcpy(&tid, m.mad + 8, 8);
    tid = be64toh(tid);
    tid = (tid & 0xffff0000ffffffffULL) | ((uint64_t)agentid << 32);
    tid = htobe64(tid);
    memcpy(m.mad + 8, &tid, 8);
  }
  if (send(portid, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) return -EIO;
  trace("send %s/%d node %s dlid %u class 0x%02x attr 0x%04x", hp->device, hp->port, hp->node,
        be16toh(u->addr.lid), m.mad[1], (m.mad[16] << 8) | m.mad[17]);
  return 0;
}

int umad_poll(int portid, int timeout_ms) {
  struct pollfd pfd = {.fd = portid, .events = POLLIN};
  int rc = poll(&pfd, 1, timeout_ms);
  if (rc < 0) return -errno;
  return rc == 0 ? -ETIMEDOUT : 0;
}

int umad_recv(int portid, void* umad, int* length, int timeout_ms) {
  int rc = umad_poll(portid, timeout_ms);
  if (rc < 0) return rc;
  struct ibsim_mad m;
  /* Peeked first: a MAD too long for the caller's buffer stays queued, as the kernel keeps it
   * when it answers ENOSPC. */
  ssize_t got = recv(portid, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT);
  if (got < 0) return errno == EAGAIN ? -ETIMEDOUT : -errno;
  if (got != (ssize_t)sizeof(m)) {
    (void)!recv(portid, &m, sizeof(m), MSG_DONTWAIT); /* not ibsim's: drop it */
    return -EAGAIN;
  }
  uint64_t mad_length = be64toh(m.length);
  if (mad_length > sizeof(m.mad)) mad_length = sizeof(m.mad);
  if (*length < (int)mad_length) {
    *length = (int)mad_length;
    return -ENOSPC;
  }
  (void)!recv(portid, &m, sizeof(m), MSG_DONTWAIT);
  ib_user_mad_t* u = umad;
  memset(u, 0, umad_size());
  const int answer = (m.mad[3] & 0x80) != 0;
  uint64_t tid;
  memcpy(&tid, m.mad + 8, 8);
  int agent = (int)((be64toh(tid) >> 32) & 0xffff);
  if (!answer && m.status == 0) {
    /* A request for us: the agent registered for its class takes it. */
    agent = -1;
    pthread_mutex_lock(&open_mutex);
    struct open_port* p = find_open(portid);
    for (int i = 0; p != NULL && i < kMaxAgents; ++i)
      if (p->agents[i].in_use && p->agents[i].mgmt_class == m.mad[1]) agent = i;
    pthread_mutex_unlock(&open_mutex);
    if (agent < 0) return -EAGAIN;
  }
  u->agent_id = (uint32_t)agent;
  u->status = be32toh(m.status);
  u->length = (uint32_t)(umad_size() + mad_length);
  u->addr.qpn = m.sqp;
  u->addr.lid = (uint16_t)m.slid;
  memcpy(umad_get_mad(umad), m.mad, mad_length);
  *length = (int)mad_length;
  return agent;
}
