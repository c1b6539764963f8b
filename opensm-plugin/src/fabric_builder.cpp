// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// FabricBuilder: OpenSM's view of the subnet, fact by fact, into the engine's fabric model.
#include "rdma-qos/opensm-plugin/fabric_builder.h"

#include <algorithm>
#include <unordered_map>

namespace rdmaqos::osmp {
namespace {

constexpr uint8_t kPortStateActive = 4;
constexpr uint8_t kNodeSwitch = 2;

// `governing_capmask`: the CapabilityMask that says whether the port's extended speeds count
// (a CA port's own, port 0's for every port of a switch), as in rdma-qos-sad's discovery.
void fill_link(sad::PortModel& pm, const rdma_qos_osmp_port& info, uint32_t governing_capmask) {
  pm.mtu_cap = info.mtu_cap;
  pm.capability_mask = info.capability_mask;
  pm.capability_mask2 = info.capability_mask2;
  pm.rate =
      sad::port_rate(info.link_width_active, info.link_speed_active, info.link_speed_ext_active,
                     (governing_capmask & sad::kCapHasExtendedSpeeds) != 0)
          .rate;
}

}  // namespace

sad::Sl2Vl decode_sl2vl(const std::array<uint8_t, 8>& raw) {
  sad::Sl2Vl t{};
  for (size_t sl = 0; sl < 16; ++sl) {
    const uint8_t byte = raw[sl / 2];
    t[sl] = static_cast<uint8_t>(sl % 2 == 0 ? byte >> 4 : byte & 0xF);
  }
  return t;
}

int FabricBuilder::node(uint64_t guid, uint8_t type, std::string description, uint8_t num_ports) {
  NodeFacts n;
  n.guid = guid;
  n.type = type;
  n.description = std::move(description);
  n.ports.resize(size_t{num_ports} + 1);
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size() - 1);
}

FabricBuilder::PortFacts* FabricBuilder::find(int node, uint8_t port) {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return nullptr;
  auto& ports = nodes_[static_cast<size_t>(node)].ports;
  return port < ports.size() ? &ports[port] : nullptr;
}

void FabricBuilder::port(int node, uint8_t port, const rdma_qos_osmp_port& info) {
  if (PortFacts* p = find(node, port)) {
    p->present = true;
    p->info = info;
  }
}

void FabricBuilder::pkey(int node, uint8_t port, uint16_t pkey) {
  if (PortFacts* p = find(node, port); p != nullptr && (pkey & 0x7FFF) != 0) {
    p->pkeys.push_back(pkey);
  }
}

void FabricBuilder::sl2vl(int node, uint8_t port, uint8_t in_port,
                          const std::array<uint8_t, 8>& raw) {
  if (PortFacts* p = find(node, port)) p->sl2vl[in_port] = decode_sl2vl(raw);
}

void FabricBuilder::lft(int node, std::vector<uint8_t> table) {
  if (node >= 0 && static_cast<size_t>(node) < nodes_.size())
    nodes_[static_cast<size_t>(node)].lft = std::move(table);
}

// The ports OpenSM answers for as if Active although they are not (see FabricModel): CA and
// router ports not Active, the CA or router port behind a switch port not Active (only paths
// that end there cross it), and switch ports not Active linked to a switch.
void FabricBuilder::find_inactive(const std::unordered_map<uint64_t, int>& by_guid,
                                  sad::FabricModel& model) const {
  for (const NodeFacts& node : nodes_) {
    const bool is_switch = node.type == kNodeSwitch;
    // Port 0 of a switch is the switch itself, Active whatever its PortInfo says.
    for (size_t p = 1; p < node.ports.size(); ++p) {
      const PortFacts& pf = node.ports[p];
      if (!pf.present || pf.info.port_state == kPortStateActive) continue;
      if (!is_switch) {
        model.inactive_endpoints.push_back(pf.info.guid);
        continue;
      }
      if (pf.info.peer_node_guid == 0) continue;  // no link OpenSM knows: no path crosses it
      auto peer = by_guid.find(pf.info.peer_node_guid);
      if (peer == by_guid.end()) continue;
      const NodeFacts& other = nodes_[static_cast<size_t>(peer->second)];
      if (other.type == kNodeSwitch) {
        ++model.inactive_switch_ports;
      } else if (pf.info.peer_port < other.ports.size() && other.ports[pf.info.peer_port].present) {
        model.inactive_endpoints.push_back(other.ports[pf.info.peer_port].info.guid);
      }
    }
  }
  auto& v = model.inactive_endpoints;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

sad::FabricModel FabricBuilder::build() const {
  sad::FabricModel model;
  model.sm_port_guid = sm_port_guid_;
  model.routing = routing_;
  model.original_extended_rates_only = original_rates_;
  model.multicast_groups = groups_;
  model.ports_with_aliases.assign(aliased_.begin(), aliased_.end());
  std::unordered_map<uint64_t, int> by_guid;
  for (size_t i = 0; i < nodes_.size(); ++i) by_guid.emplace(nodes_[i].guid, static_cast<int>(i));
  bool have_prefix = false;
  model.nodes.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeFacts& facts = nodes_[i];
    sad::NodeModel& node = model.nodes[i];
    node.guid = facts.guid;
    node.type = static_cast<policy::NodeType>(facts.type);
    node.description = facts.description;
    node.ports.resize(facts.ports.size());
    const bool is_switch = facts.type == kNodeSwitch;
    if (is_switch) node.lft = facts.lft;
    for (size_t p = 0; p < facts.ports.size(); ++p) {
      const PortFacts& pf = facts.ports[p];
      if (!pf.present) continue;
      sad::PortModel& pm = node.ports[p];
      pm.present = true;
      const uint32_t governing = is_switch && facts.ports[0].present
                                     ? facts.ports[0].info.capability_mask
                                     : pf.info.capability_mask;
      fill_link(pm, pf.info, governing);
      const bool active = pf.info.port_state == kPortStateActive;
      if (is_switch && p == 0) {
        pm.guid = facts.guid;
        pm.lid = pf.info.base_lid;
        pm.lmc = pf.info.lmc;
        pm.pkeys = pf.pkeys;
        continue;
      }
      pm.guid = is_switch ? facts.guid : pf.info.guid;
      if (active && pf.info.peer_node_guid != 0) {
        if (auto peer = by_guid.find(pf.info.peer_node_guid); peer != by_guid.end()) {
          pm.peer_node = peer->second;
          pm.peer_port = pf.info.peer_port;
        }
      }
      if (!is_switch) {
        pm.lid = pf.info.base_lid;
        pm.lmc = pf.info.lmc;
        if (!have_prefix) {
          model.subnet_prefix = pf.info.subnet_prefix;
          have_prefix = true;
        }
        if (pm.lid == 0 || !active) continue;
        pm.pkeys = pf.pkeys;
        if (pm.pkeys.empty()) ++model.endpoints_without_pkeys;
        if (auto t = pf.sl2vl.find(0); t != pf.sl2vl.end()) pm.sl2vl = {t->second};
        continue;
      }
      if (!active) continue;
      // A switch maps SLs per (input port, output port): this output port's tables by input.
      pm.sl2vl.assign(facts.ports.size(), sad::Sl2Vl{});
      for (const auto& [in, table] : pf.sl2vl) {
        if (in < pm.sl2vl.size() && in != p) pm.sl2vl[in] = table;
      }
    }
  }
  find_inactive(by_guid, model);
  model.index();
  return model;
}

}  // namespace rdmaqos::osmp
