// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// QP registry storage (see qp_registry.h). A QP's address identifies it until ibv_destroy_qp,
// which erases the entry, so a reused address never inherits another QP's settings. Every
// connection makes, reads and erases an entry on each side: the entries live in one flat
// table (no allocation per QP) under one small lock (small_lock.h; a read-write lock costs more
// per step than the few instructions each step holds it for).
#include "rdma-qos/providers/qp_registry.h"

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unordered_set>
#include <utility>

#include "rdma-qos/common/pointer_map.h"
#include "rdma-qos/common/small_lock.h"

namespace rdmaqos::providers {

constinit std::atomic<bool> detail::g_rts_values{false};

namespace {

struct Store {
  mutable SmallLock mutex;
  PointerMap<QpEntry> entries;
  std::map<std::pair<const ibv_pd*, std::array<uint8_t, 16>>, QosDecision> peers;
  std::unordered_set<const ibv_pd*> rdma_cm_pds;
};

std::pair<const ibv_pd*, std::array<uint8_t, 16>> peer_key(const ibv_pd* pd, const ibv_gid& gid) {
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), gid.raw, raw.size());
  return {pd, raw};
}

Store& store() {
  static Store* s = new Store;  // never destroyed: QPs may be modified from atexit handlers
  return *s;
}

// A decision an RTS transition has work for: the level's ACK timeout or its rate limit.
void note_rts_values(const QosDecision& d) {
  if ((d.ack_timeout || (d.pace && d.static_rate)) &&
      !detail::g_rts_values.load(std::memory_order_relaxed))
    detail::g_rts_values.store(true, std::memory_order_release);
}

}  // namespace

QpRegistry& QpRegistry::instance() {
  static QpRegistry registry;
  return registry;
}

void QpRegistry::set_cm(const ibv_qp* qp, CmConnection cm) {
  std::lock_guard lock(store().mutex);
  store().entries[qp].cm = cm;
}

void QpRegistry::set_decision(const ibv_qp* qp, QosDecision decision) {
  std::lock_guard lock(store().mutex);
  note_rts_values(decision);
  store().entries[qp].decision = decision;
}

void QpRegistry::mark_rdma_cm(const ibv_qp* qp) {
  std::lock_guard lock(store().mutex);
  store().entries[qp].rdma_cm = true;
}

void QpRegistry::register_rdma_cm(const ibv_qp* qp, const std::optional<CmConnection>& cm,
                                  const std::optional<QosDecision>& decision) {
  std::lock_guard lock(store().mutex);
  QpEntry& e = store().entries[qp];
  e.rdma_cm = true;
  if (cm) e.cm = cm;
  if (decision) {
    note_rts_values(*decision);
    e.decision = decision;
  }
}

std::optional<QpEntry> QpRegistry::find(const ibv_qp* qp) const {
  std::lock_guard lock(store().mutex);
  const QpEntry* e = store().entries.find(qp);
  if (e == nullptr) return std::nullopt;
  return *e;
}

void QpRegistry::erase(const ibv_qp* qp) {
  std::lock_guard lock(store().mutex);
  store().entries.erase(qp);
}

void QpRegistry::set_peer_decision(const ibv_pd* pd, const ibv_gid& peer, QosDecision decision) {
  std::lock_guard lock(store().mutex);
  store().peers[peer_key(pd, peer)] = decision;
}

std::optional<QosDecision> QpRegistry::find_peer_decision(const ibv_pd* pd,
                                                          const ibv_gid& peer) const {
  std::lock_guard lock(store().mutex);
  auto it = store().peers.find(peer_key(pd, peer));
  if (it == store().peers.end()) return std::nullopt;
  return it->second;
}

void QpRegistry::erase_peer(const ibv_pd* pd, const ibv_gid& peer) {
  std::lock_guard lock(store().mutex);
  store().peers.erase(peer_key(pd, peer));
}

void QpRegistry::mark_rdma_cm_pd(const ibv_pd* pd) {
  std::lock_guard lock(store().mutex);
  store().rdma_cm_pds.insert(pd);
}

bool QpRegistry::is_rdma_cm_pd(const ibv_pd* pd) const {
  std::lock_guard lock(store().mutex);
  return store().rdma_cm_pds.contains(pd);
}

void QpRegistry::lock_for_fork() {
  store().mutex.lock();
}

void QpRegistry::unlock_after_fork() {
  store().mutex.unlock();
}

void QpRegistry::reset_in_child_after_fork() {
  // The child's only thread holds the lock (taken before fork); a fresh one over it, so nothing
  // a parent's thread was waiting for carries over (the old one deliberately not destroyed).
  new (&store().mutex) SmallLock;
}

}  // namespace rdmaqos::providers
