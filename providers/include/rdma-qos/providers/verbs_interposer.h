// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs interposer's core, separated from symbol lookup and device queries so tests drive it
// with a fake provider ("next") and fake ports. The preload module wires the real ones.
#pragma once

#include <infiniband/verbs.h>

#include <optional>
#include <string>

#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/providers/qp_registry.h"

namespace rdmaqos::providers {

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using CreateAhFn = ibv_ah* (*)(ibv_pd*, ibv_ah_attr*);
using DestroyQpFn = int (*)(ibv_qp*);

// What the module knows about a plain-verbs QP or address handle (no rdma_cm decision) when it
// reaches RTR or is created: the inputs of its policy decision (VerbsHost::plain_verbs).
struct PlainVerbsTarget {
  ibv_context* context = nullptr;
  uint8_t port = 0;
  uint16_t pkey_index = 0;  // the QP's (InfiniBand; VerbsHost::qp_pkey_index); 0 otherwise
  LinkKind link = LinkKind::kUnknown;
  const ibv_ah_attr* ah = nullptr;  // destination LID / GID, as the program passed them
};

// Everything the interposer asks of the program's host, in one named interface: the preload
// module implements it over the devices, its SA clients, its log and its configuration; tests
// over fakes. Any of these may throw: the interposer lets it through, and the module's C
// boundary catches it (ModifyQpCall::finish, CreateAhCall::finish).
class VerbsHost {
 public:
  virtual ~VerbsHost() = default;
  // The fixed flow label, SL and traffic class settings, and what becomes of values the program
  // set itself.
  virtual const VerbsSettings& settings() const = 0;
  virtual ProgramValues program_values() const = 0;
  // Link kind of (context, port, sgid index); kUnknown leaves the call as the program made it.
  virtual LinkKind link_kind(ibv_context* context, uint8_t port, uint8_t sgid_index) = 0;
  // The QP's port when the call does not name it (ibv_query_qp in the module).
  virtual uint8_t qp_port(ibv_qp* qp) = 0;
  // The QP's P_Key index: asked only for a plain-verbs QP on InfiniBand reaching RTR, whose
  // policy matches on its P_Key.
  virtual uint16_t qp_pkey_index(ibv_qp* qp) = 0;
  // The level of a plain-verbs QP at RTR, or of an address handle no rdma_cm id decided for:
  // the host policy on RoCE, the SA on InfiniBand. nullopt: the stock behaviour (and the fixed
  // settings).
  virtual std::optional<QosDecision> plain_verbs(const PlainVerbsTarget& target) = 0;
  // ibv_modify_qp_rate_limit with the rate in kbit/s: 0 or an errno value (EOPNOTSUPP when the
  // device has none).
  virtual int rate_limit(ibv_qp* qp, uint32_t kbps) = 0;
  virtual void log_once(const std::string& key, const std::string& message) = 0;
  // The test record (test_record knob): whether lines are wanted, since building one costs more
  // than the decision, and one line.
  virtual bool recording() const = 0;
  virtual void record(const std::string& json_line) = 0;
};

// One program call passed on to the provider (`next`), remembering whether the provider has
// answered it: a call with the program's own arguments answers it whatever the result, a changed
// one only by succeeding. When the interposer throws (the preload module catches everything at
// its C boundary), finish() returns that answer, or makes the program's call if there is none
// yet, so the provider never runs a call twice that it already answered.
class ModifyQpCall {
 public:
  ModifyQpCall(ModifyQpFn next, ibv_qp* qp, ibv_qp_attr* attr, int mask)
      : next_(next), qp_(qp), attr_(attr), mask_(mask) {}
  int call(ibv_qp_attr* attr, int mask);  // the provider, with these attributes
  int finish();
  ibv_qp* qp() const { return qp_; }
  ibv_qp_attr* attr() const { return attr_; }
  int mask() const { return mask_; }

 private:
  ModifyQpFn next_;
  ibv_qp* qp_;
  ibv_qp_attr* attr_;
  int mask_;
  std::optional<int> answer_;
};

class CreateAhCall {
 public:
  CreateAhCall(CreateAhFn next, ibv_pd* pd, ibv_ah_attr* attr)
      : next_(next), pd_(pd), attr_(attr) {}
  ibv_ah* call(ibv_ah_attr* attr);
  ibv_ah* finish();
  ibv_pd* pd() const { return pd_; }
  ibv_ah_attr* attr() const { return attr_; }

 private:
  CreateAhFn next_;
  ibv_pd* pd_;
  ibv_ah_attr* attr_;
  bool answered_ = false;
  ibv_ah* answer_ = nullptr;
  int answer_errno_ = 0;
};

// Wraps one ibv_modify_qp call: never changes the caller's attr, never makes a call fail that
// would have succeeded unchanged (a rejected change is retried as the program asked). After a
// successful transition to RTS of a QP whose decision paces (a level's rate-limit,
// QosDecision::pace), the rate is also set through VerbsHost::rate_limit (the AV's static rate
// stays where the device has no rate limiting).
int interpose_modify_qp(ModifyQpCall& call, VerbsHost& host);
int interpose_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ModifyQpFn next, VerbsHost& host);

// Most transitions carry no address vector (INIT, RTS, ...) and need nothing of the module but
// an RTS the level's ACK timeout and pacing, when some level has either. For the rest the
// interposer makes the program's call as it is, without the machinery of interpose_modify_qp.
// Connection setup makes three such transitions per QP. (The port and P_Key index an INIT
// transition names are not kept: only a plain-verbs QP on InfiniBand needs them, at RTR, where
// it asks the QP (VerbsHost::qp_pkey_index); rdma_cm QPs, on every connection, would pay for the
// note.)
inline bool modify_qp_is_bookkeeping(const ibv_qp_attr& attr, int mask) {
  if (mask & IBV_QP_AV) return false;
  const bool rts = (mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RTS;
  return !rts || !QpRegistry::any_rts_values();
}

// Wraps one ibv_create_ah call, with the same guarantees.
ibv_ah* interpose_create_ah(CreateAhCall& call, VerbsHost& host);
ibv_ah* interpose_create_ah(ibv_pd* pd, ibv_ah_attr* attr, CreateAhFn next, VerbsHost& host);

// Wraps one ibv_destroy_qp call: the QP's entry is forgotten before `next` frees it, so a QP
// another thread creates at the same address once `next` returns keeps its own entry. Never
// throws; `next`'s answer is returned.
int interpose_destroy_qp(ibv_qp* qp, DestroyQpFn next) noexcept;

}  // namespace rdmaqos::providers
