// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A hand-built subnet for the answer engine's tests: one switch (LID 1) and three CAs.
#pragma once

#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad::testing {

// SL n to VL n, and SL 15 to VL 14: no SL is dropped.
inline constexpr Sl2Vl kIdentity = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14};

// sw (GUID 0x100, LID 1; port 0: MTU 1024, 4x SDR) links
//   port 1 <-> a  (port GUID 0x11, LID 2), 4x QDR (40G, rate 7)
//   port 2 <-> b  (port GUID 0x21, LID 3), 4x SDR (10G, rate 3)
//   port 3 <-> c  (port GUID 0x31, LID 4), 4x QDR
// PKeys: every port full in 0x7FFF; a and c full in 0x0010, b limited in 0x0010; a and c
// full in 0x0040. No SL2VL table maps an SL to VL 15.
inline FabricModel small_model() {
  FabricModel f;
  auto ca = [](uint64_t node_guid, const char* desc, uint16_t lid, uint8_t rate,
               std::vector<uint16_t> pkeys) {
    NodeModel n;
    n.guid = node_guid;
    n.type = policy::NodeType::kCa;
    n.description = desc;
    n.ports.resize(2);
    PortModel& p = n.ports[1];
    p.present = true;
    p.guid = node_guid + 1;
    p.lid = lid;
    p.mtu_cap = 4;
    p.rate = rate;
    p.pkeys = std::move(pkeys);
    p.sl2vl = {kIdentity};
    p.peer_node = 0;
    return n;
  };
  NodeModel sw;
  sw.guid = 0x100;
  sw.type = policy::NodeType::kSwitch;
  sw.description = "sw";
  sw.ports.resize(4);
  sw.ports[0].present = true;
  sw.ports[0].guid = 0x100;
  sw.ports[0].lid = 1;
  sw.ports[0].mtu_cap = 3;
  sw.ports[0].rate = 3;
  sw.ports[0].pkeys = {0xFFFF};
  const uint8_t rates[4] = {0, 7, 3, 7};
  for (uint8_t p = 1; p <= 3; ++p) {
    PortModel& port = sw.ports[p];
    port.present = true;
    port.guid = 0x100;
    port.mtu_cap = 4;
    port.rate = rates[p];
    port.sl2vl.assign(4, kIdentity);
    port.peer_node = p;
    port.peer_port = 1;
  }
  sw.lft = {0xFF, 0, 1, 2, 3};
  f.nodes.push_back(std::move(sw));
  f.nodes.push_back(ca(0x10, "a HCA-1", 2, 7, {0xFFFF, 0x8010, 0x8040}));
  f.nodes.push_back(ca(0x20, "b HCA-1", 3, 3, {0xFFFF, 0x0010}));
  f.nodes.push_back(ca(0x30, "c HCA-1", 4, 7, {0xFFFF, 0x8010, 0x8040}));
  for (int n = 1; n <= 3; ++n)
    f.nodes[static_cast<size_t>(n)].ports[1].peer_port = static_cast<uint8_t>(n);
  f.sm_port_guid = 0x11;
  f.index();
  return f;
}

inline constexpr Endpoint kSwitch{0, 0};
inline constexpr Endpoint kA{1, 1};
inline constexpr Endpoint kB{2, 1};
inline constexpr Endpoint kC{3, 1};

}  // namespace rdmaqos::sad::testing
