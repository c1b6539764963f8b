// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A hand-built subnet where the LIDs of one port take different routes (path-bits, explain).
#pragma once

#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad::testing {

inline constexpr Sl2Vl kTwoRouteIdentity = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14};

// sw1 (LID 1) and sw2 (LID 2) are linked twice: port 2 to port 2 at 4x QDR (rate 7, MTU 2048)
// and port 3 to port 3 at 4x SDR (rate 3, MTU 1024), whose sw1 side maps SL 5 to VL 15.
// a (GUID 0x11, LIDs 4-5, LMC 1) hangs off sw1 port 1, b (GUID 0x21, LIDs 8-11, LMC 2) off sw2
// port 1, both at 4x QDR. The even LIDs of a and b cross the fast link, the odd ones the slow.
inline FabricModel two_route_model() {
  FabricModel f;
  auto sw = [](uint64_t guid, uint16_t lid) {
    NodeModel n;
    n.guid = guid;
    n.type = policy::NodeType::kSwitch;
    n.description = "sw";
    n.ports.resize(4);
    n.ports[0].present = true;
    n.ports[0].guid = guid;
    n.ports[0].lid = lid;
    n.ports[0].pkeys = {0xFFFF};
    for (uint8_t p = 1; p <= 3; ++p) {
      PortModel& port = n.ports[p];
      port.present = true;
      port.guid = guid;
      port.mtu_cap = p == 3 ? 3 : 4;
      port.rate = p == 3 ? 3 : 7;
      port.sl2vl.assign(4, kTwoRouteIdentity);
      port.peer_port = p;
    }
    return n;
  };
  auto ca = [](uint64_t guid, uint16_t lid, uint8_t lmc, int peer) {
    NodeModel n;
    n.guid = guid;
    n.type = policy::NodeType::kCa;
    n.description = "ca";
    n.ports.resize(2);
    PortModel& p = n.ports[1];
    p.present = true;
    p.guid = guid + 1;
    p.lid = lid;
    p.lmc = lmc;
    p.rate = 7;
    p.pkeys = {0xFFFF};
    p.sl2vl = {kTwoRouteIdentity};
    p.peer_node = peer;
    p.peer_port = 1;
    return n;
  };
  f.nodes.push_back(sw(0x100, 1));
  f.nodes.push_back(sw(0x200, 2));
  f.nodes.push_back(ca(0x10, 4, 1, 0));
  f.nodes.push_back(ca(0x20, 8, 2, 1));
  f.nodes[0].ports[1].peer_node = 2;
  f.nodes[1].ports[1].peer_node = 3;
  for (int s = 0; s < 2; ++s) {
    f.nodes[static_cast<size_t>(s)].ports[2].peer_node = 1 - s;
    f.nodes[static_cast<size_t>(s)].ports[3].peer_node = 1 - s;
  }
  f.nodes[0].ports[3].sl2vl[1][5] = 15;  // from a, leaving on the slow link
  //               LID: 0     1  2  3     4  5  6     7     8  9  10 11
  f.nodes[0].lft = {0xFF, 0, 2, 0xFF, 1, 1, 0xFF, 0xFF, 2, 3, 2, 3};
  f.nodes[1].lft = {0xFF, 2, 0, 0xFF, 2, 3, 0xFF, 0xFF, 1, 1, 1, 1};
  f.index();
  return f;
}

}  // namespace rdmaqos::sad::testing
