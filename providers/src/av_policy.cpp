// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Address-vector decisions of the verbs interposer (see av_policy.h).
#include "rdma-qos/providers/av_policy.h"

#include <fmt/format.h>

#include "rdma-qos/providers/entropy.h"

namespace rdmaqos::providers {
namespace {

bool is_roce(LinkKind link) {
  return link == LinkKind::kRoceV1 || link == LinkKind::kRoceV2;
}

// Whether to touch this link at all: RoCE always; InfiniBand when told to, or when there is a
// decision (the SA's answer: the SA's policy chose it).
bool acts_on(LinkKind link, const VerbsSettings& s, const std::optional<QosDecision>& d) {
  return is_roce(link) || (link == LinkKind::kInfiniBand && (s.apply_on_ib || d));
}

// The fixed settings apply on InfiniBand only with apply_on_ib.
VerbsSettings levels_for(LinkKind link, const VerbsSettings& s) {
  if (link != LinkKind::kInfiniBand || s.apply_on_ib) return s;
  VerbsSettings out = s;
  out.sl.reset();
  out.traffic_class.reset();
  return out;
}

// SL, traffic class, rate from a decision or the environment; a decision wins.
void apply_levels(ibv_ah_attr& ah, const std::optional<QosDecision>& d, const VerbsSettings& s,
                  AvOutcome& out, bool explain) {
  std::optional<uint8_t> sl = d && d->sl ? d->sl : s.sl;
  std::optional<uint8_t> tclass = d && d->traffic_class ? d->traffic_class : s.traffic_class;
  if (sl && ah.sl != *sl) {
    ah.sl = *sl;
    out.changed = true;
    if (explain) out.reason += fmt::format(" sl={}", *sl);
  }
  // A traffic class only means something in a GRH, which RoCE always has.
  if (tclass && ah.is_global && ah.grh.traffic_class != *tclass) {
    ah.grh.traffic_class = *tclass;
    out.changed = true;
    if (explain) out.reason += fmt::format(" tclass={}", *tclass);
  }
  if (d && d->static_rate && ah.static_rate != *d->static_rate) {
    ah.static_rate = *d->static_rate;
    out.changed = true;
    if (explain) out.reason += fmt::format(" rate={}", *d->static_rate);
  }
}

}  // namespace

AvOutcome decide_qp_av(ibv_qp_attr& attr, int& mask, uint32_t lqpn, LinkKind link,
                       const std::optional<CmConnection>& cm,
                       const std::optional<QosDecision>& decision, const VerbsSettings& s,
                       bool explain) {
  AvOutcome out;
  if (!(mask & IBV_QP_AV)) return {false, "no address vector"};
  if (!acts_on(link, s, decision))
    return {false, link == LinkKind::kInfiniBand ? "InfiniBand port (apply_on_ib=0)"
                                                 : "unknown link layer"};
  ibv_ah_attr& ah = attr.ah_attr;

  if (link == LinkKind::kRoceV2 && ah.is_global) {
    std::optional<uint32_t> label;
    const char* why = "";
    if (cm) {
      // rdma_cm: the kernel filled its own sport*31+dport label; replace it unless the program
      // chose one.
      if (cm->application_label) {
        why = "application's label kept";
      } else {
        label = cm_flow_label(s.flow_label, cm->dport, cm->sport);
        why = label ? "CM ports" : "mode off";
      }
    } else if (ah.grh.flow_label != 0) {
      why = "program's label kept";
    } else if (s.flow_label.mode == FlowLabelMode::kFixed) {
      label = s.flow_label.fixed_label;
      why = "fixed label";
    } else if (mask & IBV_QP_DEST_QPN) {
      label = qpn_flow_label(s.flow_label, lqpn, attr.dest_qp_num);
      why = label ? "QPNs" : "mode off";
    } else {
      why = "no remote QPN";
    }
    if (label && *label != ah.grh.flow_label) {
      ah.grh.flow_label = *label;
      out.changed = true;
    }
    if (explain) out.reason = fmt::format("flow_label=0x{:05x} ({})", ah.grh.flow_label, why);
  }

  apply_levels(ah, decision, levels_for(link, s), out, explain);
  if (decision && decision->path_mtu && (mask & IBV_QP_PATH_MTU) &&
      *decision->path_mtu < attr.path_mtu) {
    attr.path_mtu = *decision->path_mtu;
    out.changed = true;
    if (explain) out.reason += fmt::format(" mtu={}", static_cast<int>(*decision->path_mtu));
  }
  return out;
}

AvOutcome decide_ah(ibv_ah_attr& ah, LinkKind link, const std::optional<QosDecision>& decision,
                    const VerbsSettings& s, bool explain) {
  AvOutcome out;
  if (!acts_on(link, s, decision))
    return {false, link == LinkKind::kInfiniBand ? "InfiniBand port (apply_on_ib=0)"
                                                 : "unknown link layer"};
  if (link == LinkKind::kRoceV2 && ah.is_global && ah.grh.flow_label == 0) {
    // A decision's label wins, as its levels win over the environment's.
    std::optional<uint32_t> label;
    const char* why = "";
    if (decision && decision->flow_label) {
      label = *decision->flow_label & RDMA_QOS_FLOW_LABEL_MASK;
      why = "decision's label";
    } else if (s.flow_label.mode == FlowLabelMode::kFixed) {
      label = s.flow_label.fixed_label;
      why = "fixed label";
    }
    if (label && *label != 0) {
      ah.grh.flow_label = *label;
      out.changed = true;
      if (explain) out.reason = fmt::format("flow_label=0x{:05x} ({})", ah.grh.flow_label, why);
    }
  }
  apply_levels(ah, decision, levels_for(link, s), out, explain);
  return out;
}

void keep_program_values(QosDecision& d, const ibv_ah_attr& ah, ProgramValues values) {
  if (values == ProgramValues::kReplace) return;
  if (ah.sl != 0) d.sl.reset();
  if (ah.is_global && ah.grh.traffic_class != 0) d.traffic_class.reset();
  if (ah.static_rate != 0) d.static_rate.reset();
  d.ack_timeout.reset();
}

VerbsSettings verbs_settings_from(const std::string& flow_label, const std::string& sl,
                                  const std::string& tclass, const std::string& apply_on_ib) {
  VerbsSettings s;
  if (auto f = parse_flow_label_setting(flow_label)) s.flow_label = *f;
  if (auto v = parse_unsigned(sl, 15); v && !sl.empty()) s.sl = static_cast<uint8_t>(*v);
  if (auto v = parse_unsigned(tclass, 255); v && !tclass.empty())
    s.traffic_class = static_cast<uint8_t>(*v);
  s.apply_on_ib = apply_on_ib == "1";
  return s;
}

}  // namespace rdmaqos::providers
