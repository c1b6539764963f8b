// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The policy for QPs a program connects with plain verbs (no rdma_cm, no SA query of its own):
// the level decided from what the module knows at RTR (port, destination LID, P_Key, the
// program's QoS-Class and Service-ID). On RoCE the host policy decides, as for rdma_cm; on
// InfiniBand the SA does (its policy), one PathRecord query per (port, destination, P_Key,
// class, Service-ID) and cache lifetime, however many QPs go to that destination. The device
// and the SA are reached through injected operations, so tests drive it without either.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/shared_client.h"

namespace rdmaqos::preload {

struct PlainVerbsInputs {
  std::string device;  // the cache key's port: device name and port number
  uint8_t port = 0;
  providers::LinkKind link = providers::LinkKind::kUnknown;
  uint16_t slid = 0;  // InfiniBand: the port's LID with the QP's path bits
  uint16_t dlid = 0;  // InfiniBand: the destination; 0 (not routed by LID) leaves QPs stock
  std::optional<uint16_t> pkey;  // nullopt: unknown, the query names none
  std::optional<uint16_t> qos_class;
  std::optional<uint64_t> service_id;
};

struct PlainVerbsOptions {
  // RoCE: classes, Service-ID and the host policy (the module's CmSettings).
  const rdmacm::CmSettings* settings = nullptr;
  bool query_sa = true;  // sa knob: off never asks
  // The longest an RTR transition waits for the SA (verbs_sa_wait_ms): the query's deadline,
  // and how long a QP waits for another thread's query of the same key.
  std::chrono::milliseconds wait{250};
  // How long an answer, or a failure, is reused (cache_ttl); 0: every QP asks.
  std::chrono::milliseconds ttl{std::chrono::seconds(10)};
  size_t capacity = 4096;  // keys kept at once; when full, expired ones go, else all
};

// The SA as a plain-verbs decision asks it, and where its failures are told: the module
// implements it over its port's SA client and its log, tests over a fake. May throw (the
// decider catches it, logs once and leaves the QP stock).
class PlainVerbsSa {
 public:
  virtual ~PlainVerbsSa() = default;
  // InfiniBand: whether the port's SA advertises QoS, and its answer to a query.
  virtual rdmaqos::Result<bool> qos_supported(const PlainVerbsInputs& in,
                                              sa::Deadline deadline) = 0;
  virtual rdmaqos::Result<std::vector<sa::PathRecord>> path_query(const PlainVerbsInputs& in,
                                                                  const sa::PathQuery& query,
                                                                  sa::Deadline deadline) = 0;
  virtual void log_once(const std::string& key, const std::string& message) = 0;
};

// The PathRecord query for a plain-verbs QP: SLID, DLID, reversible, one path; the P_Key when
// known, the Service-ID when the program has one, the QoS-Class when the SA advertises QoS.
sa::PathQuery plain_verbs_query(const PlainVerbsInputs& in, bool sa_advertises_qos);

class PlainVerbsDecider {
 public:
  using Clock = std::chrono::steady_clock;
  // `sa`: not null.
  PlainVerbsDecider(PlainVerbsOptions options, std::unique_ptr<PlainVerbsSa> sa);
  ~PlainVerbsDecider();
  PlainVerbsDecider(const PlainVerbsDecider&) = delete;
  PlainVerbsDecider& operator=(const PlainVerbsDecider&) = delete;

  // The level for `in`; nullopt: stock behaviour (no class and no Service-ID, no policy match,
  // the SA failed or was too slow: each failure logged once). Never throws for the SA's sake;
  // thread-safe.
  std::optional<providers::QosDecision> decide(const PlainVerbsInputs& in);

 private:
  friend void lock_plain_verbs_for_fork();
  friend void unlock_plain_verbs_after_fork();
  friend void reset_plain_verbs_in_child();
  struct Cache;
  std::optional<providers::QosDecision> ask_sa(const PlainVerbsInputs& in, sa::Deadline deadline);
  PlainVerbsOptions options_;
  std::unique_ptr<PlainVerbsSa> sa_;
  std::unique_ptr<Cache> cache_;
};

// The caches of every decider, for the module's fork handlers (fork_guard.cpp): taken before
// fork() and released after it in the parent. In the child, the queries other threads had under
// way are forgotten (no thread of the child will ever finish them) and the caches released.
void lock_plain_verbs_for_fork();
void unlock_plain_verbs_after_fork();
void reset_plain_verbs_in_child();

}  // namespace rdmaqos::preload
