// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* RoCE v2 flow label and UDP source port formulas (see entropy.h). Kept in C so the preload
 * module links them without a C++ runtime. */
#include "rdma-qos/providers/entropy.h"

uint32_t rdma_qos_flow_label_from_cm_ports(uint16_t dport, uint16_t sport) {
  uint32_t hash = (uint32_t)dport * (uint32_t)sport;
  hash ^= hash >> 16;
  hash ^= hash >> 8;
  return hash & RDMA_QOS_FLOW_LABEL_MASK;
}

uint32_t rdma_qos_flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn) {
  uint64_t v = (uint64_t)(lqpn & 0xFFFFFFu) * (uint64_t)(rqpn & 0xFFFFFFu);
  v ^= v >> 20;
  v ^= v >> 40;
  return (uint32_t)(v & RDMA_QOS_FLOW_LABEL_MASK);
}

uint32_t rdma_qos_flow_label_linux_cm(uint16_t sport, uint16_t dport) {
  return ((uint32_t)sport * 31u + (uint32_t)dport) & RDMA_QOS_FLOW_LABEL_MASK;
}

/* The UDP source port keeps 14 bits of the label: low14 XOR high6. To make those 14 bits a
 * bijection of (a + b) mod 2^14, the low 14 bits are target ^ high6, so the fold cancels high6
 * and leaves target = (a + b) * K mod 2^14 (K odd: multiplication by it permutes Z/2^14 and
 * scatters neighbouring sums). high6 takes other bits of a hash of the sum, so the 20-bit
 * label carries entropy for IPv6 flow-label hashing too. a + b is symmetric. */
uint32_t rdma_qos_flow_label_spread(uint16_t port_a, uint16_t port_b) {
  const uint32_t kScatter = 0x2C35u;    /* odd */
  const uint32_t kGolden = 0x9E3779B1u; /* 2^32 / phi, odd */
  uint32_t sum = (uint32_t)port_a + (uint32_t)port_b;
  uint32_t target = (sum * kScatter) & 0x3FFFu;
  uint32_t high6 = ((sum * kGolden) >> 26) & 0x3Fu;
  uint32_t label = (high6 << 14) | (target ^ high6);
  /* 0 means "no label" to every provider (it then hashes QPNs); keep the same fold. */
  if (label == 0) label = (1u << 14) | 1u;
  return label;
}

uint16_t rdma_qos_udp_sport_from_flow_label(uint32_t flow_label) {
  uint32_t low = flow_label & 0x03FFFu;
  uint32_t high = (flow_label & 0xFC000u) >> 14;
  return (uint16_t)((low ^ high) | RDMA_QOS_ROCE_SPORT_BASE);
}
