// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The per-descriptor QoS of rsockets (see socket_qos.h).
#include "rdma-qos/rdmacm-qos/socket_qos.h"

namespace rdmaqos::rdmacm {

void SocketQosTable::set_tos(int socket, uint8_t tos) {
  std::lock_guard lock(mutex_);
  sockets_[socket].tos = tos;
}

void SocketQosTable::set_class(int socket, uint16_t qos_class) {
  std::lock_guard lock(mutex_);
  sockets_[socket].qos_class = qos_class;
}

std::optional<SocketQos> SocketQosTable::find(int socket) const {
  std::lock_guard lock(mutex_);
  auto it = sockets_.find(socket);
  if (it == sockets_.end()) return std::nullopt;
  return it->second;
}

void SocketQosTable::erase(int socket) {
  std::lock_guard lock(mutex_);
  sockets_.erase(socket);
}

void SocketQosTable::lock_for_fork() {
  mutex_.lock();
}

void SocketQosTable::unlock_after_fork() {
  mutex_.unlock();
}

}  // namespace rdmaqos::rdmacm
