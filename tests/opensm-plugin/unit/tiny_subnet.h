// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A tiny subnet as OpenSM would describe it to the plugin: switch S (LID 1, ports 1-3), CA A
// (LID 2) at S port 1, CA B (LID 3) at S port 2, S port 3 down; 4x QDR links, MTU 2048.
#pragma once

#include <array>

#include "rdma-qos/opensm-plugin/fabric_builder.h"

namespace rdmaqos::osmp::testing {

inline constexpr uint64_t kSwitchGuid = 0x100;
inline constexpr uint64_t kNodeA = 0x200, kPortA = 0x201;
inline constexpr uint64_t kNodeB = 0x300, kPortB = 0x301;
inline constexpr uint64_t kPrefix = 0xFE80000000000000ULL;
// Every SL on VL 0 except SL 15 (VL 15).
inline constexpr std::array<uint8_t, 8> kSl2Vl = {0, 0, 0, 0, 0, 0, 0, 0x0F};

inline rdma_qos_osmp_port port_info(uint64_t guid, uint16_t lid, uint8_t state, uint64_t peer = 0,
                                    uint8_t peer_port = 0) {
  rdma_qos_osmp_port p{};
  p.guid = guid;
  p.base_lid = lid;
  p.mtu_cap = 4;
  p.link_width_active = 2;  // 4x
  p.link_speed_active = 4;  // QDR
  p.port_state = state;
  p.subnet_prefix = kPrefix;
  p.peer_node_guid = peer;
  p.peer_port = peer_port;
  return p;
}

inline constexpr uint8_t kInit = 2, kArmed = 3, kActive = 4;

// `b_ports`: host B's port count (a node swap that leaves B with fewer ports breaks a policy
// naming its second port); `b_pkeys`: whether B's P_Key table has been read; `b_state` and
// `s2_state`: the PortState OpenSM holds for B's port and for S port 2 (B's link).
inline void feed_tiny_subnet(FabricBuilder& b, uint8_t b_ports = 1, bool b_pkeys = true,
                             uint8_t b_state = kActive, uint8_t s2_state = kActive) {
  constexpr uint8_t kDown = 1;
  b.sm_port_guid(kPortA);
  int s = b.node(kSwitchGuid, 2, "switch S", 3);
  b.port(s, 0, port_info(kSwitchGuid, 1, kActive));
  b.pkey(s, 0, 0xFFFF);
  b.port(s, 1, port_info(kSwitchGuid, 0, kActive, kNodeA, 1));
  b.port(s, 2, port_info(kSwitchGuid, 0, s2_state, kNodeB, 1));
  b.port(s, 3, port_info(kSwitchGuid, 0, kDown));
  for (uint8_t out = 1; out <= 2; ++out)
    for (uint8_t in = 0; in <= 3; ++in)
      if (in != out) b.sl2vl(s, out, in, kSl2Vl);
  b.lft(s, {0xFF, 0, 1, 2});
  int a = b.node(kNodeA, 1, "host A", 1);
  b.port(a, 1, port_info(kPortA, 2, kActive, kSwitchGuid, 1));
  b.pkey(a, 1, 0xFFFF);
  b.pkey(a, 1, 0x0000);  // an empty slot
  b.sl2vl(a, 1, 0, kSl2Vl);
  int bn = b.node(kNodeB, 1, "host B", b_ports);
  b.port(bn, 1, port_info(kPortB, 3, b_state, kSwitchGuid, 2));
  if (b_pkeys) b.pkey(bn, 1, 0x7FFF);
  b.sl2vl(bn, 1, 0, kSl2Vl);
}

}  // namespace rdmaqos::osmp::testing
