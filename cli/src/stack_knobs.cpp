// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The stacks' QoS variables (see stack_knobs.h), each checked against the stack's source at the
// release named beside it; Documentation/hpc.md has the same table with the documentation
// pages. Variables a stack reads only for other fabrics (libfabric's FI_OPX_SL for Omni-Path,
// FI_CXI_RGET_TC for Slingshot) and ones whose default already follows a variable below
// (UCX_IB_REVERSE_SL follows UCX_IB_SL; UCX before 1.17 warns about it as unknown) are left out.
#include "stack_knobs.h"

#include <fmt/format.h>

namespace rdmaqos::cli {

std::span<const StackKnob> stack_knobs() {
  static constexpr StackKnob kKnobs[] = {
      // UCX 1.22.0 src/uct/ib/base/ib_iface.c (the same since 1.13): every IB transport,
      // verbs (rc_verbs, ud_verbs) and DEVX (rc_mlx5, dc_mlx5, ud_mlx5, rc_gda), and srd.
      {"UCX_IB_SL", "UCX", "service level", KnobQuantity::kSl,
       "auto: on InfiniBand SL 0, or the first adaptive-routing SL when UCX_IB_AR_ENABLE asks "
       "for it; on RoCE priority 0"},
      {"UCX_IB_TRAFFIC_CLASS", "UCX", "traffic class byte", KnobQuantity::kTrafficClass,
       "auto: on RoCE v2 the port's mlx5 global traffic class (UCX 1.21+), else 106 (DSCP 26); "
       "0 otherwise"},
      // NCCL 2.30.7-1 src/transport/net_ib/connect.cc: the host-proxy IB/RoCE transport, and
      // src/transport/net_ib/gdaki/gin_host_gdaki.cc: GPU-initiated networking (GIN) over DOCA
      // GPUNetIO, whose DEVX QPs take their SL from the traffic class when NCCL_IB_SL is unset.
      {"NCCL_IB_SL", "NCCL", "service level", KnobQuantity::kSl,
       "the communicator's trafficClass if the program set one, else 0"},
      {"NCCL_IB_TC", "NCCL", "traffic class byte", KnobQuantity::kTrafficClass,
       "the communicator's trafficClass if the program set one, else 0"},
      // NCCL 2.22.3-1 and later: the traffic class of the CTS (FIFO) messages a receiver
      // writes to its sender, on RoCE only.
      {"NCCL_IB_FIFO_TC", "NCCL", "traffic class byte of its FIFO (control) messages",
       KnobQuantity::kTrafficClass, "the connection's traffic class, the sender's NCCL_IB_TC"},
      // NCCL 2.30.7-1 src/transport/net_ib/gin.cc: all GIN traffic, proxy and GDAKI.
      {"NCCL_GIN_IB_TC", "NCCL", "traffic class byte of its GPU-initiated (GIN) traffic",
       KnobQuantity::kTrafficClass, "NCCL_IB_TC"},
      // NVSHMEM 3.4.5 and 3.5.1 src/modules/transport/common/env_defs.h: the ibrc (verbs),
      // ibdevx and ibgda (DEVX, GPU-initiated) transports.
      {"NVSHMEM_IB_SL", "NVSHMEM", "service level", KnobQuantity::kSl, "0"},
      {"NVSHMEM_IB_TRAFFIC_CLASS", "NVSHMEM", "traffic class byte", KnobQuantity::kTrafficClass,
       "0"},
      // UCC 1.8.0 src/components/tl/mlx5/tl_mlx5.c: TL/MLX5's RC and DC QPs (InfiniBand).
      {"UCC_TL_MLX5_QP_SL", "UCC", "service level of TL/MLX5's QPs", KnobQuantity::kSl, "0"},
      // libfabric 2.6.0 prov/psm3/psm3/psm_ep.c: the psm3 provider's verbs QPs and AHs.
      {"PSM3_NIC_SL", "libfabric psm3", "service level", KnobQuantity::kSl, "0"},
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
      p.why = fmt::format("{}'s {}{}: {}", k.stack, k.carries,
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
      p.why = fmt::format("{}'s {}, DSCP {} << 2 (roce_sl2tclass of SL {}): {}", k.stack, k.carries,
                          *d.traffic_class >> 2, d.sl, d.because);
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
