// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// From a scan of the fabric to the model (see discovery_scan.h).
#include "discovery_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

namespace rdmaqos::sad {

ScanNode* Scan::node(uint64_t guid) {
  for (auto& n : nodes)
    if (n.ni.node_guid == guid) return &n;
  return nullptr;
}

const ScanNode* Scan::node(uint64_t guid) const {
  return const_cast<Scan*>(this)->node(guid);
}

namespace {

using Peer = std::pair<uint64_t, uint8_t>;  // node GUID, port

// A switch input port whose SL2VL tables discovery reads: port 0, or a port linked to a node
// discovery reached.
bool sl2vl_input(const ScanNode& node, size_t in, size_t out) {
  if (in == out) return false;
  return in == 0 || (node.ports[in].present && node.ports[in].linked);
}

// The peer across an active link, as the model records it.
std::optional<Peer> scan_peer(const ScanNode& n, size_t p) {
  if (p >= n.ports.size()) return std::nullopt;
  const ScanPort& sp = n.ports[p];
  if (!sp.present || !sp.linked || !sp.pi.active()) return std::nullopt;
  return Peer{sp.remote_guid, sp.remote_port};
}

std::optional<Peer> model_peer(const FabricModel& m, const NodeModel& n, size_t p) {
  if (p >= n.ports.size()) return std::nullopt;
  const PortModel& pm = n.ports[p];
  if (!pm.present || pm.peer_node < 0 || static_cast<size_t>(pm.peer_node) >= m.nodes.size()) {
    return std::nullopt;
  }
  return Peer{m.nodes[static_cast<size_t>(pm.peer_node)].guid, pm.peer_port};
}

std::unordered_map<uint64_t, size_t> by_guid(const FabricModel& m) {
  std::unordered_map<uint64_t, size_t> out;
  for (size_t i = 0; i < m.nodes.size(); ++i) out.emplace(m.nodes[i].guid, i);
  return out;
}

}  // namespace

std::vector<TableRef> plan_tables(const Scan& scan) {
  using Kind = TableRef::Kind;
  std::vector<TableRef> out;
  for (size_t n = 0; n < scan.nodes.size(); ++n) {
    const ScanNode& node = scan.nodes[n];
    if (node.is_switch()) {
      if (!node.ports.empty() && node.ports[0].present) out.push_back({Kind::kPKeys, n, 0, 0});
      for (size_t p = 1; p < node.ports.size(); ++p) {
        if (!node.ports[p].present || !node.ports[p].pi.active()) continue;
        for (size_t in = 0; in < node.ports.size(); ++in) {
          if (!sl2vl_input(node, in, p)) continue;
          out.push_back({Kind::kSl2Vl, n, static_cast<uint8_t>(p), static_cast<uint8_t>(in)});
        }
      }
      continue;
    }
    for (size_t p = 1; p < node.ports.size(); ++p) {
      const ScanPort& sp = node.ports[p];
      if (!sp.present || sp.pi.lid == 0 || !sp.pi.active()) continue;
      out.push_back({Kind::kPKeys, n, static_cast<uint8_t>(p), 0});
      out.push_back({Kind::kSl2Vl, n, static_cast<uint8_t>(p), 0});
    }
  }
  return out;
}

std::vector<TableRef> take_over_tables(Scan& scan, const std::vector<TableRef>& plan,
                                       const FabricModel& previous) {
  const auto index = by_guid(previous);
  std::vector<TableRef> left;
  for (const TableRef& ref : plan) {
    ScanNode& sn = scan.nodes[ref.node];
    ScanPort& sp = sn.ports[ref.port];
    const NodeModel* pn = nullptr;
    if (auto it = index.find(sn.ni.node_guid); it != index.end()) {
      const NodeModel& candidate = previous.nodes[it->second];
      if (static_cast<uint8_t>(candidate.type) == sn.ni.type &&
          candidate.ports.size() == sn.ports.size()) {
        pn = &candidate;
      }
    }
    bool taken = false;
    if (pn != nullptr) {
      const PortModel& was = pn->ports[ref.port];
      const auto peer = scan_peer(sn, ref.port);
      if (sn.is_switch() && ref.kind == TableRef::Kind::kPKeys) {
        // Port 0: the switch's own PKeys; the same switch at the same LID keeps them.
        if (was.present && was.lid == sp.pi.lid) {
          sp.pkeys = was.pkeys;
          sp.pkeys_read = true;
          taken = true;
        }
      } else if (sn.is_switch()) {
        // Read before when both ports were active and linked; kept when both links still end
        // where they did.
        const bool in_same =
            ref.in == 0 || (scan_peer(sn, ref.in).has_value() &&
                            model_peer(previous, *pn, ref.in) == scan_peer(sn, ref.in));
        if (was.sl2vl.size() == sn.ports.size() && peer &&
            model_peer(previous, *pn, ref.port) == peer && in_same) {
          if (sp.sl2vl.size() <= ref.in) sp.sl2vl.resize(static_cast<size_t>(ref.in) + 1);
          sp.sl2vl[ref.in] = was.sl2vl[ref.in];
          taken = true;
        }
      } else if (was.present && was.lid == sp.pi.lid && !was.sl2vl.empty() && peer &&
                 model_peer(previous, *pn, ref.port) == peer) {
        // A CA port read before (active with a LID: both its tables), at the same LID and
        // linked to the same switch port.
        if (ref.kind == TableRef::Kind::kPKeys) {
          sp.pkeys = was.pkeys;
          sp.pkeys_read = true;
        } else {
          if (sp.sl2vl.empty()) sp.sl2vl.resize(1);
          sp.sl2vl[0] = was.sl2vl[0];
        }
        taken = true;
      }
    }
    if (!taken) left.push_back(ref);
  }
  return left;
}

std::optional<Discovery> assemble(const Scan& scan) {
  std::vector<size_t> order(scan.nodes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&scan](size_t a, size_t b) {
    return scan.nodes[a].ni.node_guid < scan.nodes[b].ni.node_guid;
  });
  std::unordered_map<uint64_t, int> index;
  for (size_t i = 0; i < order.size(); ++i) {
    index.emplace(scan.nodes[order[i]].ni.node_guid, static_cast<int>(i));
  }

  Discovery out;
  out.missing = scan.missing;
  FabricModel& model = out.model;
  model.nodes.resize(order.size());
  auto warn = [&out](std::optional<std::string> w) {
    if (w) out.warnings.push_back(std::move(*w));
  };
  bool have_prefix = false;
  for (size_t i = 0; i < order.size(); ++i) {
    const ScanNode& sn = scan.nodes[order[i]];
    NodeModel& node = model.nodes[i];
    const bool is_switch = sn.is_switch();
    node.guid = sn.ni.node_guid;
    node.type = static_cast<policy::NodeType>(sn.ni.type);
    node.description = sn.description;
    node.ports.resize(sn.ports.size());

    uint32_t p0_capmask = 0;
    if (is_switch && !sn.ports.empty() && sn.ports[0].present) {
      const ScanPort& s0 = sn.ports[0];
      PortModel& p0 = node.ports[0];
      p0.present = true;
      p0.guid = node.guid;
      p0.lid = s0.pi.lid;
      p0.lmc = s0.pi.lmc;
      p0_capmask = s0.pi.capability_mask;
      warn(fill_port_info(p0, s0.pi, p0_capmask, true,
                          fmt::format("switch {:#x} port 0", node.guid)));
      if (s0.pkeys_read) {
        p0.pkeys = s0.pkeys;
      } else {
        out.missing.push_back(fmt::format("no PKey table from LID {}", p0.lid));
      }
    }
    if (is_switch) node.lft = sn.lft;
    for (size_t p = 1; p < sn.ports.size(); ++p) {
      const ScanPort& sp = sn.ports[p];
      if (!sp.present) continue;
      PortModel& pm = node.ports[p];
      pm.present = true;
      pm.guid = is_switch ? node.guid : sp.guid;
      const bool active = sp.pi.active();
      const uint32_t capmask = is_switch ? p0_capmask : sp.pi.capability_mask;
      warn(fill_port_info(
          pm, sp.pi, capmask, active,
          fmt::format("{} {:#x} port {}", is_switch ? "switch" : "CA", node.guid, p)));
      if (sp.linked && active) {
        if (auto it = index.find(sp.remote_guid); it != index.end()) {
          pm.peer_node = it->second;
          pm.peer_port = sp.remote_port;
        }
      }
      if (!is_switch) {
        pm.lid = sp.pi.lid;
        pm.lmc = sp.pi.lmc;
        if (!have_prefix) {
          // The packet life without a level is OpenSM's subnet_timeout option, not what the
          // ports report (ibsim answers 31): the model keeps its default for the caller to set.
          model.subnet_prefix = sp.pi.gid_prefix;
          have_prefix = true;
        }
        if (pm.lid == 0 || !active) continue;
        if (sp.pkeys_read) {
          pm.pkeys = sp.pkeys;
        } else {
          out.missing.push_back(fmt::format("no PKey table from LID {}", pm.lid));
        }
        if (!sp.sl2vl.empty() && sp.sl2vl[0]) {
          pm.sl2vl = {*sp.sl2vl[0]};
        } else {
          out.missing.push_back(fmt::format("no SL2VL table from LID {}", pm.lid));
        }
        continue;
      }
      if (!active) continue;
      // A switch maps SLs per (input port, output port): this output port's table for every
      // input, port 0 included (paths that start at the switch).
      pm.sl2vl.assign(sn.ports.size(), Sl2Vl{});
      for (size_t in = 0; in < sn.ports.size(); ++in) {
        if (!sl2vl_input(sn, in, p)) continue;
        if (in < sp.sl2vl.size() && sp.sl2vl[in]) {
          pm.sl2vl[in] = *sp.sl2vl[in];
        } else {
          out.missing.push_back(
              fmt::format("no SL2VL table {}->{} from switch {:#x}", in, p, node.guid));
        }
      }
    }
  }
  auto self = index.find(scan.self_guid);
  if (self == index.end()) return std::nullopt;
  out.self.node = self->second;
  const NodeModel& self_node = model.nodes[static_cast<size_t>(self->second)];
  out.self.port = self_node.type == policy::NodeType::kSwitch ? 0 : scan.self_port;
  if (out.self.port >= self_node.ports.size() || !self_node.ports[out.self.port].present) {
    return std::nullopt;
  }
  model.sm_port_guid = model.port(out.self).guid;
  model.index();
  return out;
}

ModelChanges compare_models(const FabricModel& before, const FabricModel& after) {
  ModelChanges c;
  const auto was = by_guid(before);
  const auto now = by_guid(after);
  for (const auto& [guid, i] : now) {
    if (!was.contains(guid)) ++c.nodes_added;
  }
  for (const auto& [guid, i] : was) {
    auto it = now.find(guid);
    if (it == now.end()) {
      ++c.nodes_gone;
      continue;
    }
    const NodeModel& a = before.nodes[i];
    const NodeModel& b = after.nodes[it->second];
    for (size_t p = 0; p < std::min(a.ports.size(), b.ports.size()); ++p) {
      if (model_peer(before, a, p) != model_peer(after, b, p)) ++c.links_changed;
      if (a.ports[p].present && b.ports[p].present && a.ports[p].lid != b.ports[p].lid) {
        ++c.lids_changed;
      }
    }
  }
  return c;
}

}  // namespace rdmaqos::sad
