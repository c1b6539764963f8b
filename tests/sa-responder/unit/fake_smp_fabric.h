// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A simulated subnet that answers discovery's SMP Gets (directed-route and LID-routed
// NodeInfo, NodeDescription, SwitchInfo, PortInfo, P_KeyTable, SLtoVLMappingTable and
// LinearForwardingTable) from its own state, as ibsim does, so the incremental re-discovery runs
// in a unit test; and the scan a full discovery (libibnetdisc) would make of it, from that state
// directly, to compare against.
#pragma once

#include <infiniband/mad.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "discovery_scan.h"
#include "smp_window.h"

namespace rdmaqos::sad::testing {

struct FakePort {
  bool up = false;      // physically linked (LinkUp)
  bool active = false;  // PortState Active (else Init while up, Down while not)
  int peer = -1;        // node index
  uint8_t peer_port = 0;
  uint16_t lid = 0;  // CA ports (a switch's: port 0)
  uint8_t lmc = 0;
  uint64_t guid = 0;  // CA ports
  std::vector<uint16_t> pkeys = {0xFFFF};
  Sl2Vl sl2vl{};      // CA ports
  uint8_t width = 2;  // 4x
  uint8_t speed = 4;  // QDR
};

struct FakeNode {
  uint8_t type = kNodeTypeCa;
  uint64_t guid = 0;
  std::string description;
  std::vector<FakePort> ports;  // by port number; [0] used by switches
  uint16_t partition_cap = 32;
  std::vector<uint8_t> lft;  // switches: the whole table (size = LinearFDBTop + 1)
  std::map<std::pair<int, int>, Sl2Vl> sl2vl;  // switches: (in, out)
  bool mute = false;                           // answers nothing
};

class FakeFabric : public SmpTransport {
 public:
  std::vector<FakeNode> nodes;
  int self = 0;  // the node discovery runs at
  uint8_t self_port = 1;
  size_t gets = 0;  // Gets answered or not, in all
  std::map<uint16_t, size_t> gets_by_attr;

  int add_switch(uint64_t guid, int ports, uint16_t lid) {
    FakeNode n;
    n.type = kNodeTypeSwitch;
    n.guid = guid;
    n.description = "switch " + std::to_string(nodes.size());
    n.ports.resize(static_cast<size_t>(ports) + 1);
    n.ports[0].lid = lid;
    n.ports[0].active = true;
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  int add_ca(uint64_t guid, uint16_t lid, int ports = 1) {
    FakeNode n;
    n.type = kNodeTypeCa;
    n.guid = guid;
    n.description = "ca " + std::to_string(nodes.size());
    n.ports.resize(static_cast<size_t>(ports) + 1);
    for (int p = 1; p <= ports; ++p) {
      n.ports[static_cast<size_t>(p)].guid = guid + static_cast<uint64_t>(p);
      n.ports[static_cast<size_t>(p)].lid = static_cast<uint16_t>(lid + p - 1);
      for (size_t sl = 0; sl < 16; ++sl)
        n.ports[static_cast<size_t>(p)].sl2vl[sl] = static_cast<uint8_t>((sl + guid) % 8);
    }
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  void connect(int a, int pa, int b, int pb, bool active = true) {
    FakePort& x = port(a, pa);
    FakePort& y = port(b, pb);
    x.up = y.up = true;
    x.active = y.active = active;
    x.peer = b;
    x.peer_port = static_cast<uint8_t>(pb);
    y.peer = a;
    y.peer_port = static_cast<uint8_t>(pa);
  }
  void disconnect(int a, int pa) {
    FakePort& x = port(a, pa);
    if (x.peer >= 0) {
      FakePort& y = port(x.peer, x.peer_port);
      y.up = y.active = false;
      y.peer = -1;
    }
    x.up = x.active = false;
    x.peer = -1;
  }
  FakePort& port(int n, int p) {
    return nodes.at(static_cast<size_t>(n)).ports.at(static_cast<size_t>(p));
  }
  // Every switch: SL2VL tables that differ per (in, out) and a forwarding table to every LID.
  void program() {
    uint16_t top = 0;
    for (const auto& n : nodes)
      for (const auto& p : n.ports) top = std::max(top, p.lid);
    for (auto& n : nodes) {
      if (n.type != kNodeTypeSwitch) continue;
      n.lft.assign(static_cast<size_t>(top) + 1, 0xFF);
      for (size_t lid = 1; lid <= top; ++lid)
        n.lft[lid] = static_cast<uint8_t>(1 + (lid + n.guid) % (n.ports.size() - 1));
      for (int in = 0; in < static_cast<int>(n.ports.size()); ++in)
        for (int out = 1; out < static_cast<int>(n.ports.size()); ++out) {
          Sl2Vl t{};
          for (size_t sl = 0; sl < 16; ++sl) t[sl] = static_cast<uint8_t>((sl + in + 2 * out) % 8);
          n.sl2vl[{in, out}] = t;
        }
    }
  }

  std::vector<std::optional<SmpData>> get(const std::vector<SmpGet>& batch) override {
    std::vector<std::optional<SmpData>> out;
    for (const SmpGet& g : batch) {
      ++gets;
      ++gets_by_attr[g.attr];
      out.push_back(answer(g));
    }
    return out;
  }

  // What libibnetdisc finds, with every table the model holds read (plan_tables).
  Scan full_scan() const {
    Scan scan;
    std::vector<int> index(nodes.size(), -1);
    std::queue<int> todo;
    auto reach = [&](int n) {
      if (index[static_cast<size_t>(n)] >= 0) return;
      index[static_cast<size_t>(n)] = static_cast<int>(scan.nodes.size());
      scan.nodes.emplace_back();
      todo.push(n);
    };
    reach(self);
    while (!todo.empty()) {
      const int n = todo.front();
      todo.pop();
      const FakeNode& fn = nodes[static_cast<size_t>(n)];
      if (fn.mute) continue;
      const bool forwards = fn.type == kNodeTypeSwitch;
      for (size_t p = 1; p < fn.ports.size(); ++p) {
        const FakePort& fp = fn.ports[p];
        if (!fp.up || fp.peer < 0) continue;
        if (forwards || (n == self && p == self_port)) reach(fp.peer);
      }
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (index[n] < 0) continue;
      const FakeNode& fn = nodes[n];
      ScanNode& sn = scan.nodes[static_cast<size_t>(index[n])];
      sn.set_node_info(node_info(static_cast<int>(n), fn.type == kNodeTypeSwitch ? 0 : 1));
      sn.description = fn.description;
      if (fn.type == kNodeTypeSwitch) {
        sn.switch_info = switch_info(fn);
        sn.lft = fn.lft;
      }
      for (size_t p = 0; p < fn.ports.size(); ++p) {
        const FakePort& fp = fn.ports[p];
        const bool peer_reached = fp.up && fp.peer >= 0 && index[static_cast<size_t>(fp.peer)] >= 0;
        bool present = fn.type == kNodeTypeSwitch;
        if (fn.type != kNodeTypeSwitch && p > 0) {
          present = (static_cast<int>(n) == self && p == self_port) ||
                    (peer_reached && nodes[static_cast<size_t>(fp.peer)].type == kNodeTypeSwitch);
        }
        if (!present) continue;
        ScanPort& sp = sn.ports[p];
        sp.set_info(port_info(static_cast<int>(n), static_cast<int>(p), static_cast<int>(p)));
        sp.guid = fn.type == kNodeTypeSwitch ? fn.guid : fp.guid;
        if (p > 0 && peer_reached) {
          sp.linked = true;
          sp.remote_guid = nodes[static_cast<size_t>(fp.peer)].guid;
          sp.remote_port = fp.peer_port;
        }
      }
    }
    scan.self_guid = nodes[static_cast<size_t>(self)].guid;
    scan.self_port = nodes[static_cast<size_t>(self)].type == kNodeTypeSwitch ? 0 : self_port;
    for (const TableRef& t : plan_tables(scan)) {
      ScanNode& sn = scan.nodes[t.node];
      const FakeNode& fn = *find(sn.ni.node_guid);
      ScanPort& sp = sn.ports[t.port];
      if (t.kind == TableRef::Kind::kPKeys) {
        sp.pkeys = fn.ports[t.port].pkeys;
        sp.pkeys_read = true;
        continue;
      }
      if (sp.sl2vl.size() <= t.in) sp.sl2vl.resize(t.in + 1u);
      sp.sl2vl[t.in] =
          fn.type == kNodeTypeSwitch ? fn.sl2vl.at({t.in, t.port}) : fn.ports[t.port].sl2vl;
    }
    return scan;
  }

 private:
  const FakeNode* find(uint64_t guid) const {
    for (const auto& n : nodes)
      if (n.guid == guid) return &n;
    return nullptr;
  }

  static void set(SmpData& b, enum MAD_FIELDS f, uint32_t v) { mad_set_field(b.data(), 0, f, v); }

  SmpData node_info(int n, int arrival) const {
    const FakeNode& fn = nodes[static_cast<size_t>(n)];
    SmpData b{};
    set(b, IB_NODE_BASE_VERS_F, 1);
    set(b, IB_NODE_CLASS_VERS_F, 1);
    set(b, IB_NODE_TYPE_F, fn.type);
    set(b, IB_NODE_NPORTS_F, static_cast<uint32_t>(fn.ports.size() - 1));
    mad_set_field64(b.data(), 0, IB_NODE_GUID_F, fn.guid);
    mad_set_field64(
        b.data(), 0, IB_NODE_PORT_GUID_F,
        fn.type == kNodeTypeSwitch ? fn.guid : fn.ports[static_cast<size_t>(arrival)].guid);
    set(b, IB_NODE_PARTITION_CAP_F, fn.partition_cap);
    set(b, IB_NODE_LOCAL_PORT_F, static_cast<uint32_t>(arrival));
    return b;
  }

  static SmpData switch_info(const FakeNode& fn) {
    SmpData b{};
    set(b, IB_SW_LINEAR_FDB_TOP_F, static_cast<uint32_t>(fn.lft.empty() ? 0 : fn.lft.size() - 1));
    return b;
  }

  SmpData port_info(int n, int p, int arrival) const {
    const FakeNode& fn = nodes[static_cast<size_t>(n)];
    const FakePort& fp = fn.ports[static_cast<size_t>(p)];
    const bool is_switch = fn.type == kNodeTypeSwitch;
    SmpData b{};
    mad_set_field64(b.data(), 0, IB_PORT_GID_PREFIX_F, 0xFE80000000000000ULL);
    set(b, IB_PORT_LID_F, is_switch ? fn.ports[0].lid : fp.lid);
    set(b, IB_PORT_LMC_F, is_switch ? 0 : fp.lmc);
    set(b, IB_PORT_CAPMASK_F, kCapHasExtendedSpeeds | kCapHasCapabilityMask2);
    set(b, IB_PORT_LOCAL_PORT_F, static_cast<uint32_t>(arrival));
    set(b, IB_PORT_LINK_WIDTH_ACTIVE_F, fp.width);
    set(b, IB_PORT_LINK_SPEED_ACTIVE_F, fp.speed);
    set(b, IB_PORT_MTU_CAP_F, 4);
    const bool port0 = is_switch && p == 0;
    set(b, IB_PORT_STATE_F, port0 || fp.active ? 4 : fp.up ? 2 : 1);
    set(b, IB_PORT_PHYS_STATE_F, port0 || fp.up ? 5 : 2);
    return b;
  }

  std::optional<SmpData> answer(const SmpGet& g) const {
    if (!g.directed) return std::nullopt;  // the incremental discovery routes directed only
    int n = self;
    int arrival = nodes[static_cast<size_t>(self)].type == kNodeTypeSwitch ? 0 : self_port;
    for (size_t hop = 0; hop < g.path.size(); ++hop) {
      const FakeNode& fn = nodes[static_cast<size_t>(n)];
      if (fn.type != kNodeTypeSwitch && !(hop == 0 && n == self)) return std::nullopt;
      if (g.path[hop] >= fn.ports.size() || g.path[hop] == 0) return std::nullopt;
      const FakePort& fp = fn.ports[g.path[hop]];
      if (!fp.up || fp.peer < 0) return std::nullopt;
      n = fp.peer;
      arrival = fp.peer_port;
    }
    const FakeNode& fn = nodes[static_cast<size_t>(n)];
    if (fn.mute) return std::nullopt;
    const bool is_switch = fn.type == kNodeTypeSwitch;
    SmpData b{};
    switch (g.attr) {
      case 0x10:  // NodeDescription
        std::memcpy(b.data(), fn.description.data(), std::min(fn.description.size(), b.size()));
        return b;
      case 0x11: return node_info(n, arrival);
      case 0x12:
        if (!is_switch) return std::nullopt;
        return switch_info(fn);
      case 0x15: {
        const int p = is_switch ? static_cast<int>(g.mod) : arrival;
        if (p >= static_cast<int>(fn.ports.size())) return std::nullopt;
        return port_info(n, p, arrival);
      }
      case 0x16: {
        const int p = is_switch ? static_cast<int>(g.mod >> 16) : arrival;
        const unsigned block = g.mod & 0xFFFF;
        const auto& pkeys = fn.ports[static_cast<size_t>(p)].pkeys;
        for (size_t i = 0; i < 32 && block * 32 + i < pkeys.size(); ++i) {
          b[2 * i] = static_cast<uint8_t>(pkeys[block * 32 + i] >> 8);
          b[2 * i + 1] = static_cast<uint8_t>(pkeys[block * 32 + i]);
        }
        return b;
      }
      case 0x17: {
        const Sl2Vl* t = nullptr;
        if (is_switch) {
          auto it =
              fn.sl2vl.find({static_cast<int>(g.mod >> 8 & 0xFF), static_cast<int>(g.mod & 0xFF)});
          if (it == fn.sl2vl.end()) return std::nullopt;
          t = &it->second;
        } else {
          t = &fn.ports[static_cast<size_t>(arrival)].sl2vl;
        }
        for (size_t sl = 0; sl < 16; ++sl)
          b[sl / 2] = static_cast<uint8_t>(b[sl / 2] | ((*t)[sl] << (sl % 2 == 0 ? 4 : 0)));
        return b;
      }
      case 0x19: {
        if (!is_switch) return std::nullopt;
        for (size_t i = 0; i < 64 && g.mod * 64 + i < fn.lft.size(); ++i)
          b[i] = fn.lft[g.mod * 64 + i];
        return b;
      }
      default: return std::nullopt;
    }
  }
};

}  // namespace rdmaqos::sad::testing
