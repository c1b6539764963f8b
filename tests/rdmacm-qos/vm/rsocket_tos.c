// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A socket-style ULP over rsockets that asks for its TOS the way socket programs do:
 * rsetsockopt(IPPROTO_IP, IP_TOS) with an int, rsetsockopt(IPPROTO_IPV6, IPV6_TCLASS) (tclass),
 * the traffic class in the destination's sin6_flowinfo (flowinfo), or
 * rsetsockopt(SOL_SOCKET, SO_PRIORITY) (SDP semantics: the QoS-Class); optionally connecting a
 * non-blocking socket (rconnect returns EINPROGRESS, rpoll waits). IPv6 when ADDR has a colon.
 * Used by the `cm` VM group (rsocket_*).
 *   rsocket_tos server ADDR PORT
 *   rsocket_tos client ADDR PORT BIND_ADDR VALUE [tos|tclass|flowinfo|priority] [block|nonblock] */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

union address {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
};

static int addr_of(const char* ip, int port, union address* a) {
  memset(a, 0, sizeof(*a));
  if (strchr(ip, ':') != NULL) {
    a->sin6.sin6_family = AF_INET6;
    a->sin6.sin6_port = htons((unsigned short)port);
    return inet_pton(AF_INET6, ip, &a->sin6.sin6_addr) == 1 ? 0 : -1;
  }
  a->sin.sin_family = AF_INET;
  a->sin.sin_port = htons((unsigned short)port);
  return inet_pton(AF_INET, ip, &a->sin.sin_addr) == 1 ? 0 : -1;
}

static socklen_t addr_len(const union address* a) {
  return a->sa.sa_family == AF_INET6 ? sizeof(a->sin6) : sizeof(a->sin);
}

static int fail(const char* what) {
  perror(what);
  return 1;
}

int main(int argc, char** argv) {
  union address sin;
  char buf[64];
  int i, s, c;
  if (argc < 4 || addr_of(argv[2], atoi(argv[3]), &sin) != 0) {
    fprintf(stderr, "usage: rsocket_tos server ADDR PORT | client ADDR PORT BIND_ADDR TOS\n");
    return 2;
  }
  s = rsocket(sin.sa.sa_family, SOCK_STREAM, 0);
  if (s < 0) return fail("rsocket");
  if (strcmp(argv[1], "server") == 0) {
    if (rbind(s, &sin.sa, addr_len(&sin)) != 0) return fail("rbind");
    if (rlisten(s, 1) != 0) return fail("rlisten");
    c = raccept(s, NULL, NULL);
    if (c < 0) return fail("raccept");
    for (i = 0; i < 10; i++) {
      if (rrecv(c, buf, sizeof(buf), MSG_WAITALL) != (ssize_t)sizeof(buf)) return fail("rrecv");
      if (rsend(c, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) return fail("rsend");
    }
    printf("rsocket_tos: server ok\n");
    rclose(c);
  } else {
    union address local;
    int value, priority, tclass, flowinfo, nonblock;
    if (argc < 6 || addr_of(argv[4], 0, &local) != 0) return 2;
    value = (int)strtol(argv[5], NULL, 0);
    priority = argc > 6 && strcmp(argv[6], "priority") == 0;
    tclass = argc > 6 && strcmp(argv[6], "tclass") == 0;
    flowinfo = argc > 6 && strcmp(argv[6], "flowinfo") == 0;
    nonblock = argc > 7 && strcmp(argv[7], "nonblock") == 0;
    if (rbind(s, &local.sa, addr_len(&local)) != 0) return fail("rbind");
    if (priority) {
      if (rsetsockopt(s, SOL_SOCKET, SO_PRIORITY, &value, sizeof(value)) != 0)
        return fail("SO_PRIORITY");
    } else if (tclass) {
      if (rsetsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &value, sizeof(value)) != 0)
        return fail("IPV6_TCLASS");
    } else if (flowinfo) {
      sin.sin6.sin6_flowinfo = htonl((uint32_t)value << 20);
    } else if (rsetsockopt(s, IPPROTO_IP, IP_TOS, &value, sizeof(value)) != 0) {
      return fail("IP_TOS");
    }
    if (nonblock) {
      struct pollfd p = {s, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      if (rfcntl(s, F_SETFL, O_NONBLOCK) != 0) return fail("rfcntl");
      if (rconnect(s, &sin.sa, addr_len(&sin)) == 0 || errno != EINPROGRESS)
        return fail("rconnect (non-blocking)");
      if (rpoll(&p, 1, 20000) != 1) return fail("rpoll");
      if (rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        errno = err;
        return fail("connect");
      }
      if (rfcntl(s, F_SETFL, 0) != 0) return fail("rfcntl");
    } else if (rconnect(s, &sin.sa, addr_len(&sin)) != 0) {
      return fail("rconnect");
    }
    memset(buf, 'q', sizeof(buf));
    for (i = 0; i < 10; i++) {
      if (rsend(s, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) return fail("rsend");
      if (rrecv(s, buf, sizeof(buf), MSG_WAITALL) != (ssize_t)sizeof(buf)) return fail("rrecv");
    }
    printf("rsocket_tos: client ok\n");
  }
  rclose(s);
  return 0;
}
