// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model's indexes, rate ordering and the LFT path walk.
#include "rdma-qos/sa-responder/fabric_model.h"

#include <endian.h>

#include <algorithm>

namespace rdmaqos::sad {
namespace {

// Rate codes from slowest to fastest by effective data rate (OpenSM's ordering, which clients
// see in the answers): 2.5 5 10 14 20 30 25 28 40 60 50 56 80 120 100 112 168 200 300 400 600
// 800 1200.
constexpr std::array<uint8_t, 23> kOrderedRates = {2, 5,  3,  11, 6,  4,  15, 19, 7,  8,  20, 12,
                                                   9, 10, 16, 13, 14, 17, 18, 21, 22, 23, 24};

int rate_rank(uint8_t rate) {
  auto it = std::find(kOrderedRates.begin(), kOrderedRates.end(), rate);
  return it == kOrderedRates.end() ? -1 : static_cast<int>(it - kOrderedRates.begin());
}

constexpr int kMaxHops = 64;

}  // namespace

int compare_rates(uint8_t a, uint8_t b) {
  return rate_rank(a) - rate_rank(b);
}

std::optional<uint8_t> slower_rate(uint8_t rate) {
  int rank = rate_rank(rate);
  if (rank <= 0) return std::nullopt;
  return kOrderedRates[static_cast<size_t>(rank - 1)];
}

bool valid_rate(uint8_t rate) {
  return rate >= 2 && rate <= 22;
}

PortRate port_rate(uint8_t width_active, uint8_t speed_active, uint8_t speed_ext_active,
                   bool extended) {
  // Columns: width 1x 2x 4x 8x 12x. Rows: lane speed SDR DDR QDR, then FDR EDR HDR NDR.
  static constexpr uint8_t kRates[7][5] = {
      {2, 5, 3, 6, 4},      {5, 3, 6, 7, 8},      {3, 6, 7, 9, 10},     {11, 19, 12, 13, 14},
      {15, 20, 16, 17, 18}, {20, 16, 17, 21, 22}, {16, 17, 21, 23, 24},
  };
  bool width_known = true;
  size_t column = 0;  // OpenSM: an unknown width counts as 1x
  switch (width_active) {
    case 1: column = 0; break;
    case 16: column = 1; break;
    case 2: column = 2; break;
    case 4: column = 3; break;
    case 8: column = 4; break;
    default: width_known = false; break;
  }
  if (extended) {
    std::optional<size_t> row;
    switch (speed_ext_active) {
      case 1: row = 3; break;
      case 2: row = 4; break;
      case 4: row = 5; break;
      case 8: row = 6; break;
      default: break;  // none, or unknown: LinkSpeedActive decides
    }
    if (row) return {kRates[*row][column], width_known};
  }
  const bool ext_known = !extended || speed_ext_active == 0;
  switch (speed_active) {
    case 1: return {kRates[0][column], width_known && ext_known};
    case 2: return {kRates[1][column], width_known && ext_known};
    case 4: return {kRates[2][column], width_known && ext_known};
    default: return {2, false};  // OpenSM: 2.5G whatever the width
  }
}

std::optional<uint8_t> rate_from_link(uint8_t width_active, uint8_t speed_active,
                                      uint8_t speed_ext_active) {
  PortRate r = port_rate(width_active, speed_active, speed_ext_active, speed_ext_active != 0);
  if (!r.known) return std::nullopt;
  return r.rate;
}

uint8_t announced_rate(uint8_t rate, uint32_t capability_mask, uint16_t capability_mask2) {
  // Without CapabilityMask2 a port announces none of the newer widths and speeds.
  const uint16_t cap2 = (capability_mask & kCapHasCapabilityMask2) != 0 ? capability_mask2 : 0;
  constexpr uint8_t k20 = 6, k25 = 15, k40 = 7, k300 = 18, k600 = 22;
  switch (rate) {
    case 19:  // 28G: 2x FDR only
      if ((cap2 & kCap2Width2x) == 0) {
        return (capability_mask & kCapHasExtendedSpeeds) != 0 ? k25 : k20;
      }
      return rate;
    case 20:  // 50G: 2x EDR or 1x HDR
      return (cap2 & (kCap2Width2x | kCap2SpeedHdr)) == 0 ? k40 : rate;
    case 21:  // 400G, 600G: HDR or NDR only
    case 22: return (cap2 & (kCap2SpeedHdr | kCap2SpeedNdr)) == 0 ? k300 : rate;
    case 23:  // 800G, 1200G: NDR only
    case 24:
      if ((cap2 & kCap2SpeedNdr) != 0) return rate;
      return (capability_mask & kCapHasCapabilityMask2) != 0 && (cap2 & kCap2SpeedHdr) == 0 ? k300
                                                                                            : k600;
    default: return rate;
  }
}

uint8_t original_extended_rate(uint8_t rate) {
  constexpr uint8_t k25 = 15, k40 = 7, k300 = 18;
  switch (rate) {
    case 19: return k25;   // 28G
    case 20: return k40;   // 50G
    case 21:               // 400G
    case 22: return k300;  // 600G
    default: return rate;
  }
}

void FabricModel::index() {
  lids_.clear();
  guids_.clear();
  for (const Endpoint& e : endpoints()) {
    const PortModel& p = port(e);
    if (p.lid != 0) lids_.emplace_back(p.lid, e);
    guids_.emplace_back(p.guid, e);
  }
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::sort(lids_.begin(), lids_.end(), by_key);
  std::sort(guids_.begin(), guids_.end(), by_key);
  // A LID belongs to the entry with the greatest base LID at or below it, when that entry's
  // range (2^LMC LIDs) reaches it: from each base up to the next base, as far as the range goes.
  lid_entry_.clear();
  if (!lids_.empty()) {
    const PortModel& last = port(lids_.back().second);
    lid_entry_.assign(size_t{lids_.back().first} + (size_t{1} << last.lmc), -1);
    for (size_t i = 0; i < lids_.size(); ++i) {
      const size_t base = lids_[i].first;
      const size_t next = i + 1 < lids_.size() ? lids_[i + 1].first : lid_entry_.size();
      const size_t end = std::min(next, base + (size_t{1} << port(lids_[i].second).lmc));
      for (size_t lid = base; lid < end && lid < lid_entry_.size(); ++lid)
        lid_entry_[lid] = static_cast<int32_t>(i);
    }
  }

  guid_map_order_ = endpoints();
  std::stable_sort(guid_map_order_.begin(), guid_map_order_.end(), [this](Endpoint x, Endpoint y) {
    return htobe64(port(x).guid) < htobe64(port(y).guid);
  });
  subnet_lmc_ = 0;
  for (const Endpoint& e : guid_map_order_) {
    if (nodes.at(static_cast<size_t>(e.node)).type != policy::NodeType::kSwitch) {
      subnet_lmc_ = std::max(subnet_lmc_, port(e).lmc);
    }
  }
}

std::vector<Endpoint> FabricModel::endpoints() const {
  std::vector<Endpoint> out;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const NodeModel& node = nodes[n];
    if (node.type == policy::NodeType::kSwitch) {
      if (!node.ports.empty() && node.ports[0].present) out.push_back({static_cast<int>(n), 0});
      continue;
    }
    for (size_t p = 1; p < node.ports.size(); ++p) {
      if (node.ports[p].present) out.push_back({static_cast<int>(n), static_cast<uint8_t>(p)});
    }
  }
  return out;
}

std::optional<Endpoint> FabricModel::by_lid(uint16_t lid) const {
  if (lid == 0 || lid >= lid_entry_.size() || lid_entry_[lid] < 0) return std::nullopt;
  return lids_[static_cast<size_t>(lid_entry_[lid])].second;
}

std::optional<Endpoint> FabricModel::by_guid(uint64_t port_guid) const {
  auto it = std::lower_bound(guids_.begin(), guids_.end(), port_guid,
                             [](const auto& entry, uint64_t g) { return entry.first < g; });
  if (it == guids_.end() || it->first != port_guid) return std::nullopt;
  return it->second;
}

std::optional<PathWalk> FabricModel::walk(Endpoint source, uint16_t dlid) const {
  auto destination = by_lid(dlid);
  if (!destination) return std::nullopt;
  PathWalk w;
  w.valid_sls = 0xFFFF;
  const PortModel& first = port(source);
  w.mtu = first.mtu_cap;
  w.rate = first.rate;
  auto visit = [&w](const PortModel& p) {
    w.mtu = std::min(w.mtu, p.mtu_cap);
    if (compare_rates(p.rate, w.rate) < 0) w.rate = p.rate;
  };
  auto drop_vl15 = [&w](const Sl2Vl& table) {
    for (int sl = 0; sl < 16; ++sl) {
      if (table[static_cast<size_t>(sl)] == 15) w.valid_sls &= static_cast<uint16_t>(~(1u << sl));
    }
  };
  if (source == *destination) {
    // A CA's loopback still leaves through its own port, whose SL2VL table applies (OpenSM
    // drops an SL its CA table maps to VL 15 even then).
    if (nodes.at(static_cast<size_t>(source.node)).type != policy::NodeType::kSwitch &&
        !first.sl2vl.empty()) {
      drop_vl15(first.sl2vl[0]);
    }
    return w;
  }

  int node = source.node;
  uint8_t in_port = 0;
  if (nodes.at(static_cast<size_t>(node)).type != policy::NodeType::kSwitch) {
    // A CA sends on its own port: its SL2VL table applies, then the link to the switch.
    if (!first.sl2vl.empty()) drop_vl15(first.sl2vl[0]);
    if (first.peer_node < 0) return std::nullopt;
    ++w.links;
    node = first.peer_node;
    in_port = first.peer_port;
    const NodeModel& peer = nodes.at(static_cast<size_t>(node));
    if (in_port >= peer.ports.size()) return std::nullopt;
    visit(peer.ports[in_port]);
    if (peer.type != policy::NodeType::kSwitch) {
      // Back-to-back CAs.
      if (Endpoint{node, in_port} != *destination) return std::nullopt;
      return w;
    }
  }
  for (int hop = 0; hop < kMaxHops; ++hop) {
    const NodeModel& sw = nodes.at(static_cast<size_t>(node));
    if (sw.type != policy::NodeType::kSwitch) return std::nullopt;
    ++w.hops;
    if (dlid >= sw.lft.size()) return std::nullopt;
    uint8_t out = sw.lft[dlid];
    if (out == 0) {
      // The destination is this switch (port 0), already counted at the start for a source
      // switch; a path into a switch ends at its port 0.
      if (Endpoint{node, 0} != *destination) return std::nullopt;
      if (in_port != 0) visit(sw.ports.at(0));
      return w;
    }
    if (out >= sw.ports.size() || !sw.ports[out].present) return std::nullopt;
    const PortModel& egress = sw.ports[out];
    visit(egress);
    if (in_port < egress.sl2vl.size()) drop_vl15(egress.sl2vl[in_port]);
    if (egress.peer_node < 0) return std::nullopt;
    ++w.links;
    node = egress.peer_node;
    in_port = egress.peer_port;
    const NodeModel& next = nodes.at(static_cast<size_t>(node));
    if (in_port >= next.ports.size()) return std::nullopt;
    visit(next.ports[in_port]);
    if (next.type != policy::NodeType::kSwitch) {
      if (Endpoint{node, in_port} != *destination) return std::nullopt;
      return w;
    }
  }
  return std::nullopt;
}

policy::Fabric FabricModel::policy_fabric() const {
  policy::Fabric f;
  f.sm_port_guid = sm_port_guid;
  for (const NodeModel& n : nodes) {
    policy::FabricNode fn;
    fn.node_guid = n.guid;
    fn.type = n.type;
    fn.description = n.description;
    fn.num_ports = n.ports.empty() ? 0 : static_cast<int>(n.ports.size()) - 1;
    for (size_t p = 0; p < n.ports.size(); ++p) {
      if (!n.ports[p].present) continue;
      if (n.type == policy::NodeType::kSwitch && p != 0) continue;
      if (n.type != policy::NodeType::kSwitch && p == 0) continue;
      fn.port_guids.emplace_back(static_cast<int>(p), n.ports[p].guid);
    }
    f.nodes.push_back(std::move(fn));
  }
  return f;
}

std::optional<uint16_t> find_pkey(const PortModel& port, uint16_t pkey) {
  for (uint16_t entry : port.pkeys) {
    if ((entry & 0x7FFF) != 0 && (entry & 0x7FFF) == (pkey & 0x7FFF)) return entry;
  }
  return std::nullopt;
}

bool share_this_pkey(const PortModel& a, const PortModel& b, uint16_t pkey) {
  auto pa = find_pkey(a, pkey);
  auto pb = find_pkey(b, pkey);
  return pa && pb && ((*pa & 0x8000) != 0 || (*pb & 0x8000) != 0);
}

bool share_any_pkey(const PortModel& a, const PortModel& b) {
  return std::any_of(a.pkeys.begin(), a.pkeys.end(),
                     [&](uint16_t p) { return (p & 0x7FFF) != 0 && share_this_pkey(a, b, p); });
}

}  // namespace rdmaqos::sad
