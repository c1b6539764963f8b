// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rsockets: what rsetsockopt(IP_TOS / SO_PRIORITY) asked for each socket descriptor, kept until
// the socket connects, and forgotten when it is closed (rclose), since the next rsocket may get
// the same descriptor and must not inherit the old one's TOS or QoS-Class.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace rdmaqos::rdmacm {

struct SocketQos {
  std::optional<uint8_t> tos;         // IP_TOS: the connection's TOS (and QoS-Class)
  std::optional<uint16_t> qos_class;  // SO_PRIORITY: the QoS-Class (SDP semantics)
};

// Thread-safe; one per process in the preload module.
class SocketQosTable {
 public:
  void set_tos(int socket, uint8_t tos);
  void set_class(int socket, uint16_t qos_class);
  std::optional<SocketQos> find(int socket) const;  // nullopt: nothing asked for
  void erase(int socket);
  // For a host module's fork handlers: fork() copies only the calling thread, so a lock another
  // thread held would stay held in the child. Taken before fork, released after, on both sides.
  void lock_for_fork();
  void unlock_after_fork();

 private:
  mutable std::mutex mutex_;
  std::map<int, SocketQos> sockets_;
};

}  // namespace rdmaqos::rdmacm
