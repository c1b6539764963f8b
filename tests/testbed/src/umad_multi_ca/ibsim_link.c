// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* ibsim's client protocol over its abstract unix datagram sockets: a control exchange of fixed
 * 80-byte messages (attach, questions, detach) and one data socket per client. */
#define _GNU_SOURCE
#include "ibsim_link.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

enum { kMagic = 0xdeadbeef, kCtlData = 64 };

/* The control message types we use, with ibsim's numbers for them. */
enum ctl_type {
  kCtlError = 0, /* the answer to a refused request */
  kCtlConnect = 1,
  kCtlDisconnect = 2,
  kCtlGetNodeInfo = 7,
  kCtlGetPortInfo = 8,
  kCtlGetPkeys = 10,
};

struct ctl_message {
  uint32_t magic;
  uint32_t client;
  uint32_t type;
  uint32_t len;
  uint8_t data[kCtlData];
};

/* The attach request: `id` names the client's sockets (":in<id>"), and ibsim answers with its
 * own index of the client in the same field. */
struct attach_request {
  uint32_t id;
  uint32_t qp;
  uint32_t issm;
  char node[32];
};

_Static_assert(sizeof(struct ctl_message) == 80, "ibsim's control message is 80 bytes");
_Static_assert(sizeof(struct ibsim_mad) == 288, "ibsim's MAD message is 288 bytes");

/* An abstract socket name "<sockname>:<suffix>". Its length counts one NUL after the text:
 * ibsim's names do, and an abstract name matches only with the same length. */
static socklen_t make_name(struct sockaddr_un* a, const char* sockname, const char* suffix) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s:%s", sockname, suffix);
  if (n < 0 || (size_t)n >= sizeof(a->sun_path) - 1) return 0;
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 2 + (size_t)n);
}

static int bind_to(int fd, const char* sockname, const char* suffix) {
  struct sockaddr_un a;
  socklen_t len = make_name(&a, sockname, suffix);
  if (len == 0) return -ENAMETOOLONG;
  return bind(fd, (struct sockaddr*)&a, len) == 0 ? 0 : -errno;
}

static int connect_to(int fd, const char* sockname, const char* suffix) {
  struct sockaddr_un a;
  socklen_t len = make_name(&a, sockname, suffix);
  if (len == 0) return -ENAMETOOLONG;
  return connect(fd, (struct sockaddr*)&a, len) == 0 ? 0 : -errno;
}

/* One request and its answer. ibsim is single-threaded and answers at once; the receive timeout
 * keeps a host process from hanging on a simulator that has gone. */
static int ctl(struct ibsim_link* link, enum ctl_type type, void* data, uint32_t len) {
  struct ctl_message m = {.magic = kMagic, .client = link->client, .type = type, .len = len};
  if (len > kCtlData) return -EINVAL;
  if (len != 0) memcpy(m.data, data, len);
  if (write(link->ctl_fd, &m, sizeof(m)) != (ssize_t)sizeof(m)) return errno != 0 ? -errno : -EIO;
  if (read(link->ctl_fd, &m, sizeof(m)) != (ssize_t)sizeof(m)) return errno != 0 ? -errno : -EIO;
  if (m.type == kCtlError) return -ENODEV;
  if (len != 0) memcpy(data, m.data, len);
  return 0;
}

int ibsim_link_open(struct ibsim_link* link, const char* sockname, const char* node) {
  /* Socket names unique across the fabric's processes: pids stay below 2^22 (pid_max), and the
   * count above them tells this process's clients apart. */
  static atomic_uint opened;
  const uint32_t id = ((atomic_fetch_add(&opened, 1) % 511 + 1) << 22) | (uint32_t)getpid();
  char suffix[32];
  int rc;
  link->client = 0;
  link->ctl_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  link->data_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (link->ctl_fd < 0 || link->data_fd < 0) {
    rc = -errno;
    goto fail;
  }
  struct timeval five_seconds = {.tv_sec = 5};
  setsockopt(link->ctl_fd, SOL_SOCKET, SO_RCVTIMEO, &five_seconds, sizeof(five_seconds));
  snprintf(suffix, sizeof(suffix), "ctl%u", id);
  if ((rc = bind_to(link->ctl_fd, sockname, suffix)) < 0) goto fail;
  if ((rc = connect_to(link->ctl_fd, sockname, "ctl")) < 0) goto fail;
  /* ibsim connects its end to ":in<id>" while attaching, and exits if that socket is missing:
   * bind it first. */
  snprintf(suffix, sizeof(suffix), "in%u", id);
  if ((rc = bind_to(link->data_fd, sockname, suffix)) < 0) goto fail;
  struct attach_request attach = {.id = id};
  snprintf(attach.node, sizeof(attach.node), "%s", node);
  if ((rc = ctl(link, kCtlConnect, &attach, sizeof(attach))) < 0) goto fail;
  link->client = attach.id;
  snprintf(suffix, sizeof(suffix), "out%u", link->client);
  if ((rc = connect_to(link->data_fd, sockname, suffix)) < 0) {
    ctl(link, kCtlDisconnect, NULL, 0);
    goto fail;
  }
  return 0;
fail:
  if (link->ctl_fd >= 0) close(link->ctl_fd);
  if (link->data_fd >= 0) close(link->data_fd);
  link->ctl_fd = link->data_fd = -1;
  return rc;
}

void ibsim_link_close(struct ibsim_link* link) {
  if (link->ctl_fd < 0) return;
  ctl(link, kCtlDisconnect, NULL, 0);
  close(link->ctl_fd);
  close(link->data_fd);
  link->ctl_fd = link->data_fd = -1;
}

int ibsim_link_port_info(struct ibsim_link* link, uint8_t portinfo[64]) {
  memset(portinfo, 0, 64); /* port number 0: the client's own port */
  return ctl(link, kCtlGetPortInfo, portinfo, 64);
}

int ibsim_link_node_info(struct ibsim_link* link, uint8_t nodeinfo[64]) {
  return ctl(link, kCtlGetNodeInfo, nodeinfo, 64);
}

int ibsim_link_pkeys(struct ibsim_link* link, uint16_t pkeys[32]) {
  return ctl(link, kCtlGetPkeys, pkeys, 64);
}
