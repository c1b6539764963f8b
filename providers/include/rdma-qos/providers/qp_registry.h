// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The registry through which the rdma_cm layer tells the verbs layer which QPs are rdma_cm
// connections (their CM ports, whether the program chose its own label) and which QoS decision
// applies to them. Keyed by the QP's address; thread-safe.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <optional>

#include "rdma-qos/providers/av_policy.h"

namespace rdmaqos::providers {

namespace detail {
// QpRegistry::any_rts_values' flag: read inline, on every RTS transition of every connection.
extern constinit std::atomic<bool> g_rts_values;
}  // namespace detail

struct QpEntry {
  std::optional<CmConnection> cm;
  std::optional<QosDecision> decision;
  // An rdma_cm id's QP, with or without a decision (on InfiniBand its path came from the SA
  // already, or from the kernel's route resolution): never a plain-verbs QP.
  bool rdma_cm = false;
};

class QpRegistry {
 public:
  static QpRegistry& instance();

  void set_cm(const ibv_qp* qp, CmConnection cm);
  void set_decision(const ibv_qp* qp, QosDecision decision);
  void mark_rdma_cm(const ibv_qp* qp);
  // The same in one step, as connection setup does it (one lock instead of several): an
  // rdma_cm id's QP, marked, with its CM ports and decision when known.
  void register_rdma_cm(const ibv_qp* qp, const std::optional<CmConnection>& cm,
                        const std::optional<QosDecision>& decision);
  std::optional<QpEntry> find(const ibv_qp* qp) const;
  // Whether any QP of this process was ever given a decision with an ACK timeout or a rate
  // limit (sticky): until one was, an RTS transition has nothing to look up, and most levels set
  // neither.
  static bool any_rts_values() { return detail::g_rts_values.load(std::memory_order_acquire); }
  void erase(const ibv_qp* qp);  // when the QP is destroyed

  // UD: an address handle has no QP, so the rdma_cm layer registers a UD id's decision by its
  // protection domain and peer GID; an AH created on that PD for that GID (such as one from a
  // received datagram's work completion) gets it. Erased when the id is destroyed.
  void set_peer_decision(const ibv_pd* pd, const ibv_gid& peer, QosDecision decision);
  std::optional<QosDecision> find_peer_decision(const ibv_pd* pd, const ibv_gid& peer) const;
  void erase_peer(const ibv_pd* pd, const ibv_gid& peer);

  // A protection domain an rdma_cm UD id uses: its address handles are made from rdma_cm's
  // attributes (on InfiniBand the SA's path), so none of them is a plain-verbs one. Kept for
  // the process: a PD allocated later at the same address then keeps its AHs stock, the safe
  // side.
  void mark_rdma_cm_pd(const ibv_pd* pd);
  bool is_rdma_cm_pd(const ibv_pd* pd) const;
  // For a host module's fork handlers: fork() copies only the calling thread, so a lock another
  // thread held would stay held in the child. Taken before fork, released after it in the
  // parent; in the child made anew instead (reset_in_child_after_fork).
  void lock_for_fork();
  void unlock_after_fork();
  void reset_in_child_after_fork();
};

}  // namespace rdmaqos::providers
