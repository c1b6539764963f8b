// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rsockets interposers: rsetsockopt takes IP_TOS, IPV6_TCLASS and SO_PRIORITY (as an int or
// a byte), rconnect hands them to the route resolution of the socket it connects, rclose forgets
// them.
#include "rsockets.h"

#include <netinet/in.h>
#include <rdma/rsocket.h>

#include <cerrno>

#include "log.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "real_calls.h"

namespace rdmaqos::preload {

thread_local std::optional<rdmacm::SocketQos> connecting_socket;
thread_local bool capturing_id = false;
thread_local rdma_cm_id* captured_id = nullptr;
thread_local bool in_rsocket = false;
thread_local bool rsocket_id_seen = false;

namespace {

rdmacm::SocketQosTable& socket_qos() {
  static auto* t = new rdmacm::SocketQosTable;  // never destroyed: rclose may run at exit
  return *t;
}

// The rdma_cm id of an rsockets stream socket, or null (datagram sockets, other versions).
rdma_cm_id* socket_id(int socket) {
  const RdmacmCalls& real = real_rdmacm();
  if (real.rgetsockopt == nullptr) return nullptr;
  int current = 0;
  socklen_t len = sizeof current;
  if (real.rgetsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &current, &len) != 0) return nullptr;
  int saved = errno;
  captured_id = nullptr;
  capturing_id = true;
  real.rsetsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &current, sizeof current);
  capturing_id = false;
  errno = saved;
  rdma_cm_id* id = captured_id;
  captured_id = nullptr;
  return id;
}

// The socket's id, when it has one, gets the TOS or class at once.
void apply_to_id(int socket, bool tos, int value) {
  rdma_cm_id* id = socket_id(socket);
  if (id == nullptr) return;
  auto& ids = rdmacm::IdRegistry::instance();
  if (!tos) {
    ids.set_class(id, static_cast<uint16_t>(value));
  } else if (auto set = real_rdmacm().set_option) {
    uint8_t byte = static_cast<uint8_t>(value);
    if (set(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) == 0)
      ids.set_program_tos(id, byte);
  }
}

}  // namespace

void lock_sockets_for_fork() {
  socket_qos().lock_for_fork();
}

void unlock_sockets_after_fork() {
  socket_qos().unlock_after_fork();
}

}  // namespace rdmaqos::preload

using rdmaqos::preload::real_rdmacm;

extern "C" {

// A stream rsocket's rdma_cm id is made by rsocket itself; whether that call reached the module
// tells, once per process, whether rsockets' route resolution will (see rsockets.h).
__attribute__((visibility("default"))) int rsocket(int domain, int type, int protocol) {
  auto next = real_rdmacm().rsocket;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  rdmaqos::preload::in_rsocket = true;
  rdmaqos::preload::rsocket_id_seen = false;
  int socket = next(domain, type, protocol);
  rdmaqos::preload::in_rsocket = false;
  if (socket >= 0 && type == SOCK_STREAM && !rdmaqos::preload::rsocket_id_seen) {
    const int saved = errno;
    rdmaqos::preload::log_once(
        "rsocket_symbolic",
        "rsocket created its rdma_cm id inside librdmacm without calling rdma_create_id (a "
        "librdmacm linked with -Bsymbolic-functions): rsockets connections keep the kernel's "
        "route and TOS, stock QoS; IP_TOS, IPV6_TCLASS and SO_PRIORITY are not applied");
    errno = saved;
  }
  return socket;
}

__attribute__((visibility("default"))) int rsetsockopt(int socket, int level, int optname,
                                                       const void* optval, socklen_t optlen) {
  auto next = real_rdmacm().rsetsockopt;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // IPv6 sockets ask for their TOS as the traffic class (IPV6_TCLASS; -1: the default).
  bool tclass = level == IPPROTO_IPV6 && optname == IPV6_TCLASS;
  bool tos = (level == IPPROTO_IP && optname == IP_TOS) || tclass;
  bool priority = level == SOL_SOCKET && optname == SO_PRIORITY;
  if ((!tos && !priority) || optval == nullptr || optlen < 1)
    return next(socket, level, optname, optval, optlen);
  int value = optlen >= static_cast<socklen_t>(sizeof(int)) ? *static_cast<const int*>(optval)
                                                            : *static_cast<const uint8_t*>(optval);
  if (tclass && value == -1) return next(socket, level, optname, optval, optlen);
  if (value < 0 || value > (tos ? 255 : 0xFFF)) {
    errno = EINVAL;
    return -1;
  }
  int saved = errno;
  if (next(socket, level, optname, optval, optlen) != 0) errno = saved;  // ours from here
  try {
    if (tos)
      rdmaqos::preload::socket_qos().set_tos(socket, static_cast<uint8_t>(value));
    else
      rdmaqos::preload::socket_qos().set_class(socket, static_cast<uint16_t>(value));
    rdmaqos::preload::apply_to_id(socket, tos, value);
  } catch (...) {
    rdmaqos::preload::log_once("rsetsockopt", "cannot record a socket's TOS; ignored");
  }
  errno = saved;
  return 0;
}

__attribute__((visibility("default"))) int rconnect(int socket, const sockaddr* addr,
                                                    socklen_t addrlen) {
  auto next = real_rdmacm().rconnect;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  try {
    rdmaqos::preload::connecting_socket = rdmaqos::preload::socket_qos().find(socket);
  } catch (...) {
  }
  int rc = next(socket, addr, addrlen);
  rdmaqos::preload::connecting_socket.reset();
  return rc;
}

// The socket's QoS is forgotten before the descriptor is released: once rclose returns, another
// thread's rsocket may get the same number and must start without it.
__attribute__((visibility("default"))) int rclose(int socket) {
  auto next = real_rdmacm().rclose;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  try {
    rdmaqos::preload::socket_qos().erase(socket);
  } catch (...) {
  }
  return next(socket);
}

}  // extern "C"
