// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// UD peers' decisions in the verbs layer's registry (see ud_peers.h).
#include "ud_peers.h"

#include <netinet/in.h>

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "config.h"
#include "rdma-qos/providers/qp_registry.h"

namespace rdmaqos::preload {
namespace {

// The GID a RoCE peer's address handles name: the IPv6 address, or IPv4 mapped (::ffff:a.b.c.d).
std::optional<ibv_gid> peer_gid(const sockaddr* addr) {
  ibv_gid gid{};
  if (addr->sa_family == AF_INET6) {
    std::memcpy(gid.raw, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, 16);
  } else if (addr->sa_family == AF_INET) {
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
    std::memcpy(gid.raw + 12, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, 4);
  } else {
    return std::nullopt;
  }
  return gid;
}

ibv_pd* id_pd(rdma_cm_id* id) {
  return id->pd != nullptr ? id->pd : id->qp != nullptr ? id->qp->pd : nullptr;
}

std::mutex ud_peer_mutex;
std::map<const rdma_cm_id*, std::pair<const ibv_pd*, ibv_gid>>& ud_peers() {
  static auto* m = new std::map<const rdma_cm_id*, std::pair<const ibv_pd*, ibv_gid>>;
  return *m;
}

}  // namespace

bool is_ud(rdma_cm_id* id) {
  return id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB || id->qp_type == IBV_QPT_UD;
}

void register_ud_peer(rdma_cm_id* id, const std::optional<rdmacm::CmDecision>& d,
                      const providers::CmConnection& cm) {
  ibv_pd* pd = id_pd(id);
  auto gid = peer_gid(&id->route.addr.dst_addr);
  auto label = rdmacm::ud_flow_label(cm, cm_config().flow_label);
  if (pd == nullptr || !gid || (!d && !label)) return;
  providers::QpRegistry::instance().set_peer_decision(pd, *gid, rdmacm::to_qos_decision(d, label));
  std::lock_guard lock(ud_peer_mutex);
  ud_peers()[id] = {pd, *gid};
}

void erase_ud_peer(const rdma_cm_id* id) {
  std::lock_guard lock(ud_peer_mutex);
  auto it = ud_peers().find(id);
  if (it == ud_peers().end()) return;
  const auto [pd, gid] = it->second;
  ud_peers().erase(it);
  for (const auto& [other, peer] : ud_peers())
    if (peer.first == pd && std::memcmp(&peer.second, &gid, sizeof gid) == 0) return;
  providers::QpRegistry::instance().erase_peer(pd, gid);
}

void lock_ud_peers_for_fork() {
  ud_peer_mutex.lock();
}

void unlock_ud_peers_after_fork() {
  ud_peer_mutex.unlock();
}

}  // namespace rdmaqos::preload
