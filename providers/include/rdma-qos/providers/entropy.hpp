// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RoCE v2 entropy formulas (entropy.h) for C++: the same functions, in the project's
// namespace, returning values. Header-only over the C library rdmaqos_entropy, which has no
// dependencies.
#pragma once

#include <cstdint>

#include "rdma-qos/providers/entropy.h"

namespace rdmaqos::providers {

constexpr uint32_t kFlowLabelMask = RDMA_QOS_FLOW_LABEL_MASK;
constexpr uint16_t kRoceSportBase = RDMA_QOS_ROCE_SPORT_BASE;

// The RFC's label of an rdma_cm connection (CM service port, active side's CM source port).
inline uint32_t flow_label_from_cm_ports(uint16_t dport, uint16_t sport) noexcept {
  return rdma_qos_flow_label_from_cm_ports(dport, sport);
}

// The RFC's label of a QP pair not set up by rdma_cm (Linux rdma_calc_flow_label()).
inline uint32_t flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn) noexcept {
  return rdma_qos_flow_label_from_qpns(lqpn, rqpn);
}

// Linux rdma_cm's (sport * 31 + dport) & 0xFFFFF; not symmetric.
inline uint32_t flow_label_linux_cm(uint16_t sport, uint16_t dport) noexcept {
  return rdma_qos_flow_label_linux_cm(sport, dport);
}

// rdma-qos's symmetric "spread" label, collision-free for up to 16,384 consecutive port sums.
inline uint32_t flow_label_spread(uint16_t port_a, uint16_t port_b) noexcept {
  return rdma_qos_flow_label_spread(port_a, port_b);
}

// The RoCE v2 UDP source port of a flow label (0xC000-0xFFFF).
inline uint16_t udp_sport_from_flow_label(uint32_t flow_label) noexcept {
  return rdma_qos_udp_sport_from_flow_label(flow_label);
}

}  // namespace rdmaqos::providers
