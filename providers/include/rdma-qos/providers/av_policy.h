// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the verbs interposer does to an address vector: the decision as a pure function of the
// QP, its port, what rdma_cm registered for it and the settings, so it is tested table by
// table without a device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rdma-qos/providers/flow_label_mode.h"

namespace rdmaqos::providers {

enum class LinkKind { kUnknown, kInfiniBand, kRoceV1, kRoceV2 };

// What the rdma_cm layer registered for a QP (the registry, qp_registry.h).
struct CmConnection {
  uint16_t dport = 0;              // CM service port (low 16 bits of the Service ID)
  uint16_t sport = 0;              // the active side's CM source port
  bool application_label = false;  // the program chose its own label (IPv6 sin6_flowinfo)
};

// A QoS decision for the QP (from the policy, through rdma_cm or the kernel shim).
struct QosDecision {
  std::optional<uint8_t> sl;
  std::optional<uint8_t> traffic_class;
  std::optional<uint8_t> static_rate;  // enum ibv_rate, for the address vector
  // static_rate is a rate-limit the level itself sets, and the QP is also paced at it at RTS
  // (ibv_modify_qp_rate_limit). Only a level the host matched itself (its policy, RoCE) says
  // so: an SA's path rate (InfiniBand) goes into the address vector alone, as the kernel puts a
  // PathRecord's rate there, and uses no entry of the device's rate table.
  bool pace = false;
  std::optional<ibv_mtu> path_mtu;  // never above the path's own MTU
  // The flow label for UD address handles to the decision's peer: an rdma_cm UD id's decision
  // carries the CM-port label its mode chose. Applied on RoCE v2 to an AH that has no label;
  // connected QPs take theirs from the CM ports or the QPNs instead.
  std::optional<uint32_t> flow_label;
  // The QP's local ACK timeout (ibv_qp_attr.timeout, 4.096 us x 2^n) at RTS: the level's packet
  // lifetime + 1, as the kernel's CM derives it from a path on InfiniBand.
  std::optional<uint8_t> ack_timeout;
};

// Whether a value a plain-verbs program set itself wins over its level (knob verbs_values).
// keep (the default): a non-zero SL, traffic class or static rate and the program's ACK timeout
// stay; zero, every stack's "unset", gets the level's. replace: the level's always.
enum class ProgramValues { kKeep, kReplace };

// Under kKeep, drops from `d` what the program set itself in `ah` (see ProgramValues) and the
// ACK timeout (a program reaching RTS always sets one). The MTU cap stays under both: it only
// ever lowers the program's path MTU, which every RTR transition carries.
void keep_program_values(QosDecision& d, const ibv_ah_attr& ah, ProgramValues values);

struct VerbsSettings {
  FlowLabelSetting flow_label;
  std::optional<uint8_t> sl;             // RDMA_QOS_SL
  std::optional<uint8_t> traffic_class;  // RDMA_QOS_TCLASS
  bool apply_on_ib = false;              // RDMA_QOS_APPLY_ON_IB
};

struct AvOutcome {
  bool changed = false;
  // Why it changed or why not, for logs and the test hook; filled only when asked for
  // (`explain`): formatting it on every connection costs more than the decision itself.
  std::string reason;
};

// RC/UC/XRC transition carrying an address vector (IBV_QP_AV). On InfiniBand without
// apply_on_ib only a decision is applied (the SA's answer for a plain-verbs QP), never the
// fixed sl/tclass settings. `attr` and `mask` are updated in
// place. `lqpn` is the QP's own number, `attr.dest_qp_num` the remote one when IBV_QP_DEST_QPN is
// in `mask`.
AvOutcome decide_qp_av(ibv_qp_attr& attr, int& mask, uint32_t lqpn, LinkKind link,
                       const std::optional<CmConnection>& cm,
                       const std::optional<QosDecision>& decision, const VerbsSettings& settings,
                       bool explain = true);

// UD address handle (an AH has no QPN pair): on RoCE v2 an AH without a label gets the
// decision's label, else a fixed setting's; a label the program set, or none in any other mode,
// is left as it is.
AvOutcome decide_ah(ibv_ah_attr& attr, LinkKind link, const std::optional<QosDecision>& decision,
                    const VerbsSettings& settings, bool explain = true);

// Settings from the host configuration values (text as in rdma-qos.conf); invalid values fall
// back to their defaults (the loader reports them).
VerbsSettings verbs_settings_from(const std::string& flow_label, const std::string& sl,
                                  const std::string& tclass, const std::string& apply_on_ib);

}  // namespace rdmaqos::providers
