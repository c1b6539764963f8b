// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs interposer's core (see verbs_interposer.h).
#include "rdma-qos/providers/verbs_interposer.h"

#include <cerrno>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rdma-qos/providers/qp_registry.h"

namespace rdmaqos::providers {
namespace {

// ordered_json: the test hook's lines keep their field order, so they read the same in every
// test and log.
using Record = nlohmann::ordered_json;

// replace: a reason can carry text that is not UTF-8 (a program's label, a level's name).
std::string dump(const Record& r) {
  return r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `source`: where the level came from (rdma_cm, plain_verbs) or none.
std::string record_line(const char* call, uint32_t qp_num, uint32_t dest_qp, const ibv_ah_attr& ah,
                        const AvOutcome& out, const char* source,
                        std::optional<ibv_mtu> path_mtu = std::nullopt) {
  Record r{{"call", call},
           {"qp_num", qp_num},
           {"dest_qp", dest_qp},
           {"flow_label", ah.grh.flow_label},
           {"sl", ah.sl},
           {"traffic_class", ah.grh.traffic_class},
           {"static_rate", ah.static_rate},
           {"changed", out.changed},
           {"reason", out.reason},
           {"source", source},
           {"dlid", ah.dlid}};
  if (path_mtu) r["path_mtu"] = static_cast<int>(*path_mtu);
  return dump(r);
}

// The level of a plain-verbs target, with what the program set itself kept as configured.
std::optional<QosDecision> plain_decision(const PlainVerbsTarget& t, VerbsHost& host) {
  if (t.link == LinkKind::kUnknown) return std::nullopt;
  std::optional<QosDecision> d = host.plain_verbs(t);
  if (d) keep_program_values(*d, *t.ah, host.program_values());
  return d;
}

// The level's rate-limit as the QP's packet-pacing limit, once the QP is in RTS (where devices
// accept it); `entry` is the QP's registry entry. Only a decision that asks for pacing gets it
// (QosDecision::pace): pacing uses entries of the device's small rate table.
void apply_rate_limit(ibv_qp* qp, VerbsHost& host, const std::optional<QpEntry>& entry) {
  if (!entry || !entry->decision || !entry->decision->pace || !entry->decision->static_rate) return;
  int mbps = ibv_rate_to_mbps(static_cast<ibv_rate>(*entry->decision->static_rate));
  if (mbps <= 0) return;
  uint32_t kbps = static_cast<uint32_t>(mbps) * 1000;
  int rc = host.rate_limit(qp, kbps);
  if (host.recording())
    host.record(dump(Record{{"call", "ibv_modify_qp_rate_limit"},
                            {"qp_num", qp->qp_num},
                            {"rate_limit_kbps", kbps},
                            {"rc", rc}}));
  if (rc == 0) return;
  if (rc == EOPNOTSUPP || rc == ENOTSUP || rc == ENOSYS)
    host.log_once("rate_limit_unsupported",
                  "the device has no QP rate limiting (ibv_modify_qp_rate_limit); the level's "
                  "rate stays the address vector's static rate");
  else
    host.log_once("rate_limit_failed",
                  fmt::format("ibv_modify_qp_rate_limit({} kbit/s) failed (error {}); the "
                              "level's rate stays the address vector's static rate",
                              kbps, rc));
}

// The RTS transition of a QP whose decision has an ACK timeout: sent with the level's timeout
// instead of the one the caller derived (on RoCE the kernel's fixed packet lifetime). nullopt:
// not applicable, or the provider refused it (the caller then makes the program's own call).
std::optional<int> modify_with_ack_timeout(ModifyQpCall& call, VerbsHost& host,
                                           const std::optional<QpEntry>& entry) {
  ibv_qp_attr* attr = call.attr();
  const int mask = call.mask();
  if (!(mask & IBV_QP_STATE) || attr->qp_state != IBV_QPS_RTS || !(mask & IBV_QP_TIMEOUT))
    return std::nullopt;
  if (!entry || !entry->decision || !entry->decision->ack_timeout) return std::nullopt;
  const uint8_t timeout = *entry->decision->ack_timeout;
  if (timeout == attr->timeout) return std::nullopt;
  ibv_qp_attr changed = *attr;
  changed.timeout = timeout;
  int rc = call.call(&changed, mask);
  if (host.recording())
    host.record(dump(Record{{"call", "ibv_modify_qp_timeout"},
                            {"qp_num", call.qp()->qp_num},
                            {"timeout", timeout},
                            {"program_timeout", attr->timeout},
                            {"rc", rc}}));
  if (rc == 0) return rc;
  host.log_once("ack_timeout", fmt::format("the provider refused the level's ACK timeout {} "
                                           "(error {}); QPs keep the one they were given",
                                           timeout, rc));
  return std::nullopt;
}

}  // namespace

int ModifyQpCall::call(ibv_qp_attr* attr, int mask) {
  int rc = next_(qp_, attr, mask);
  if (rc == 0 || (attr == attr_ && mask == mask_)) answer_ = rc;
  return rc;
}

int ModifyQpCall::finish() {
  return answer_ ? *answer_ : call(attr_, mask_);
}

ibv_ah* CreateAhCall::call(ibv_ah_attr* attr) {
  ibv_ah* ah = next_(pd_, attr);
  if (ah != nullptr || attr == attr_) {
    answered_ = true;
    answer_ = ah;
    answer_errno_ = errno;
  }
  return ah;
}

ibv_ah* CreateAhCall::finish() {
  if (!answered_) return call(attr_);
  errno = answer_errno_;
  return answer_;
}

int interpose_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ModifyQpFn next, VerbsHost& host) {
  ModifyQpCall call(next, qp, attr, mask);
  return interpose_modify_qp(call, host);
}

ibv_ah* interpose_create_ah(ibv_pd* pd, ibv_ah_attr* attr, CreateAhFn next, VerbsHost& host) {
  CreateAhCall call(next, pd, attr);
  return interpose_create_ah(call, host);
}

int interpose_destroy_qp(ibv_qp* qp, DestroyQpFn next) noexcept {
  try {
    QpRegistry::instance().erase(qp);
  } catch (...) {
    // The entry stays: the QP is destroyed all the same.
  }
  return next(qp);
}

int interpose_modify_qp(ModifyQpCall& call, VerbsHost& host) {
  ibv_qp* qp = call.qp();
  ibv_qp_attr* attr = call.attr();
  int mask = call.mask();
  auto next = [&call](ibv_qp*, ibv_qp_attr* a, int m) { return call.call(a, m); };
  if (qp == nullptr || attr == nullptr) return next(qp, attr, mask);
  auto& registry = QpRegistry::instance();
  if (modify_qp_is_bookkeeping(*attr, mask)) return next(qp, attr, mask);
  if (!(mask & IBV_QP_AV)) {
    // RTS with some level's timeout or rate: the entry is looked at once, for both.
    std::optional<QpEntry> entry = registry.find(qp);
    std::optional<int> timed = modify_with_ack_timeout(call, host, entry);
    int rc = timed ? *timed : next(qp, attr, mask);
    if (rc == 0) apply_rate_limit(qp, host, entry);
    return rc;
  }

  auto entry = registry.find(qp);
  uint8_t port = attr->ah_attr.port_num;
  if (port == 0) port = host.qp_port(qp);
  LinkKind link = host.link_kind(qp->context, port, attr->ah_attr.grh.sgid_index);

  ibv_qp_attr changed = *attr;
  int changed_mask = mask;
  const std::optional<CmConnection> no_cm;
  const std::optional<QosDecision> no_decision;
  const auto& cm = entry ? entry->cm : no_cm;
  std::optional<QosDecision> decision = entry ? entry->decision : no_decision;
  const char* source = decision ? "rdma_cm" : "none";
  // A plain-verbs QP (rdma_cm registered nothing for it) reaching RTR: its own policy decision,
  // kept in the registry so its RTS transition gets the level's rate limit and ACK timeout.
  const bool rdma_cm_qp = cm || (entry && entry->rdma_cm);
  if (!decision && !rdma_cm_qp && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) {
    // On RoCE the policy matches the default P_Key: only InfiniBand asks the QP for its index.
    const uint16_t pkey_index =
        link == LinkKind::kInfiniBand ? host.qp_pkey_index(qp) : uint16_t{0};
    PlainVerbsTarget t{qp->context, port, pkey_index, link, &attr->ah_attr};
    decision = plain_decision(t, host);
    if (decision) {
      source = "plain_verbs";
      registry.set_decision(qp, *decision);
    }
  }
  // Reasons are for the test hook; a rejection below works its own out again for the log.
  auto decide = [&](ibv_qp_attr& a, int& m, bool explain) {
    return decide_qp_av(a, m, qp->qp_num, link, cm, decision, host.settings(), explain);
  };
  AvOutcome out = decide(changed, changed_mask, host.recording());
  if (link == LinkKind::kUnknown)
    host.log_once("link", "cannot tell the link layer of a QP's port; leaving QPs unchanged");

  uint32_t dest = (mask & IBV_QP_DEST_QPN) ? attr->dest_qp_num : 0;
  auto mtu_of = [](const ibv_qp_attr& a, int m) {
    return (m & IBV_QP_PATH_MTU) ? std::optional<ibv_mtu>(a.path_mtu) : std::nullopt;
  };
  if (!out.changed) {
    if (host.recording())
      host.record(record_line("ibv_modify_qp", qp->qp_num, dest, attr->ah_attr, out, source,
                              mtu_of(*attr, mask)));
    return next(qp, attr, mask);
  }
  int rc = next(qp, &changed, changed_mask);
  if (rc == 0) {
    if (host.recording())
      host.record(record_line("ibv_modify_qp", qp->qp_num, dest, changed.ah_attr, out, source,
                              mtu_of(changed, changed_mask)));
    return 0;
  }
  if (out.reason.empty()) {
    ibv_qp_attr again = *attr;
    int again_mask = mask;
    out.reason = decide(again, again_mask, true).reason;
  }
  host.log_once("modify_qp_rejected",
                fmt::format("the provider rejected the QoS change ({}, error {}); the program's "
                            "own attributes are used",
                            out.reason, rc));
  out.changed = false;
  out.reason += " (rejected; unchanged)";
  if (host.recording())
    host.record(record_line("ibv_modify_qp", qp->qp_num, dest, attr->ah_attr, out, source,
                            mtu_of(*attr, mask)));
  return next(qp, attr, mask);
}

ibv_ah* interpose_create_ah(CreateAhCall& call, VerbsHost& host) {
  ibv_pd* pd = call.pd();
  ibv_ah_attr* attr = call.attr();
  auto next = [&call](ibv_pd*, ibv_ah_attr* a) { return call.call(a); };
  if (pd == nullptr || attr == nullptr) return next(pd, attr);
  LinkKind link = host.link_kind(pd->context, attr->port_num, attr->grh.sgid_index);
  ibv_ah_attr changed = *attr;
  std::optional<QosDecision> decision;
  if (attr->is_global) decision = QpRegistry::instance().find_peer_decision(pd, attr->grh.dgid);
  const char* source = decision ? "rdma_cm" : "none";
  if (!decision && !QpRegistry::instance().is_rdma_cm_pd(pd)) {
    // A UD address handle of a plain-verbs program: the level for its destination (the P_Key
    // is the UD QP's, unknown here: the port's first, index 0).
    decision = plain_decision(PlainVerbsTarget{pd->context, attr->port_num, 0, link, attr}, host);
    if (decision) source = "plain_verbs";
  }
  AvOutcome out = decide_ah(changed, link, decision, host.settings(), host.recording());
  if (!out.changed) {
    if (host.recording()) host.record(record_line("ibv_create_ah", 0, 0, *attr, out, source));
    return next(pd, attr);
  }
  if (ibv_ah* ah = next(pd, &changed)) {
    if (host.recording()) host.record(record_line("ibv_create_ah", 0, 0, changed, out, source));
    return ah;
  }
  if (out.reason.empty()) {
    ibv_ah_attr again = *attr;
    out.reason = decide_ah(again, link, decision, host.settings(), true).reason;
  }
  host.log_once("create_ah_rejected",
                fmt::format("the provider rejected the QoS change ({}); the program's own "
                            "attributes are used",
                            out.reason));
  return next(pd, attr);
}

}  // namespace rdmaqos::providers
