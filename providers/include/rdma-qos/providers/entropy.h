// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* RoCE v2 entropy: IPv6 flow labels and UDP source ports (RFC v2 "RoCE v2.0 Entropy", 2020).
 * Plain C, no dependencies: usable from C programs, the preload module and C++ alike. */
#ifndef RDMA_QOS_PROVIDERS_ENTROPY_H
#define RDMA_QOS_PROVIDERS_ENTROPY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDMA_QOS_FLOW_LABEL_MASK 0x000FFFFFu
#define RDMA_QOS_ROCE_SPORT_BASE 0xC000u

/* The RFC's label for an rdma_cm connection: the CM service port (low 16 bits of the REQ
 * Service ID) times the active side's CM source port, folded to 20 bits. Symmetric. */
uint32_t rdma_qos_flow_label_from_cm_ports(uint16_t dport, uint16_t sport);

/* The RFC's label for a QP not set up by rdma_cm: the two 24-bit QPNs multiplied and folded.
 * Symmetric; identical to Linux rdma_calc_flow_label(). */
uint32_t rdma_qos_flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn);

/* What Linux's rdma_cm puts into both sides' address vectors on RoCE:
 * (sport * 31 + dport) & 0xFFFFF. Not symmetric in its arguments; both sides use the active
 * side's (sport, dport). */
uint32_t rdma_qos_flow_label_linux_cm(uint16_t sport, uint16_t dport);

/* rdma-qos's "spread" label: symmetric, and the UDP source ports it yields are all different
 * for up to 16,384 connections whose port sums are consecutive (one server port, consecutive
 * client ports). Never 0. See Documentation/flow-labels.md. */
uint32_t rdma_qos_flow_label_spread(uint16_t port_a, uint16_t port_b);

/* RoCE v2 UDP source port from a flow label (RFC; Linux rdma_flow_label_to_udp_sport):
 * the 20 bits folded to 14, in the IANA ephemeral range 0xC000-0xFFFF. */
uint16_t rdma_qos_udp_sport_from_flow_label(uint32_t flow_label);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_QOS_PROVIDERS_ENTROPY_H */
