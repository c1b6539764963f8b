// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The stacks' QoS knobs (see stack_knobs.h). Sources of the semantics: UCX 1.13's IB interface
// configuration (SL "auto", TRAFFIC_CLASS "auto" = 106 on RoCE v2), NCCL's IB transport
// (NCCL_IB_SL / NCCL_IB_TC, both 0 by default, both copied into the QP's address vector).
// libfabric 1.17's verbs provider reads no such knob: its msg endpoints connect through
// rdma_cm, which the preload module covers (Documentation/hpc.md).
#include "stack_knobs.h"

#include <fmt/format.h>

namespace rdmaqos::cli {

std::span<const StackKnob> stack_knobs() {
  static constexpr StackKnob kKnobs[] = {
      {"UCX_IB_SL", "UCX", KnobQuantity::kSl,
       "auto: on InfiniBand an SL matching UCX_IB_AR, on RoCE priority 0"},
      {"UCX_IB_TRAFFIC_CLASS", "UCX", KnobQuantity::kTrafficClass,
       "auto: 106 (DSCP 26) on RoCE v2, 0 otherwise"},
      {"NCCL_IB_SL", "NCCL", KnobQuantity::kSl, "0"},
      {"NCCL_IB_TC", "NCCL", KnobQuantity::kTrafficClass, "0"},
  };
  return kKnobs;
}

std::vector<PlannedExport> plan_exports(const ClassDecision& d, const EnvLookup& env,
                                        bool override_user) {
  std::vector<PlannedExport> out;
  for (const StackKnob& k : stack_knobs()) {
    PlannedExport p;
    p.name = std::string(k.name);
    if (k.quantity == KnobQuantity::kSl) {
      p.value = d.sl;
      p.why = fmt::format("{}'s service level{}: {}", k.stack,
                          d.roce ? " (RoCE: the Ethernet priority)" : "", d.because);
    } else if (!d.roce) {
      p.action = ExportAction::kNotDecided;
      p.why =
          fmt::format("not set: on InfiniBand the SL carries the level ({}: {})", k.stack, k.stock);
    } else if (!d.traffic_class) {
      p.action = ExportAction::kNotDecided;
      p.why = fmt::format("not set: roce_sl2tclass maps no traffic class to SL {} ({}: {})", d.sl,
                          k.stack, k.stock);
    } else {
      p.value = d.traffic_class;
      p.why = fmt::format("{}'s traffic class byte, DSCP {} << 2 (roce_sl2tclass of SL {}): {}",
                          k.stack, *d.traffic_class >> 2, d.sl, d.because);
    }
    if (p.action == ExportAction::kSet) {
      auto existing = env(k.name);
      if (existing && !existing->empty()) {
        p.user_value = *existing;
        if (override_user) {
          p.why += fmt::format("; replaces the environment's {} (--override)", *existing);
        } else {
          p.action = ExportAction::kKeptUserValue;
          p.why = fmt::format(
              "kept: the environment sets {}={} (the policy's value {}; "
              "--override replaces it)",
              k.name, *existing, *p.value);
        }
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace rdmaqos::cli
