// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Two-level fat-tree generator for ibsim (see topology.h for the numbering rules).
#include "rdma-qos/testbed/topology.h"

#include <fmt/format.h>

#include <stdexcept>

namespace rdmaqos::testbed {
namespace {

constexpr uint64_t kCaGuidBase = 0x0002c90300a00000ULL;
constexpr uint64_t kSwitchGuidBase = 0x0002c90300f00000ULL;
constexpr int kMinSwitchPorts = 8;

int lanes(Width w) {
  switch (w) {
    case Width::k1x: return 1;
    case Width::k2x: return 2;
    case Width::k4x: return 4;
    case Width::k8x: return 8;
    case Width::k12x: return 12;
  }
  return 0;
}

double lane_gbps(Speed s) {
  switch (s) {
    case Speed::kSdr: return 2.5;
    case Speed::kDdr: return 5.0;
    case Speed::kQdr: return 10.0;
    case Speed::kFdr: return 14.0;
    case Speed::kEdr: return 25.0;
    case Speed::kHdr: return 50.0;
  }
  return 0;
}

// LinkSpeedExtEnabled bit of an extended speed (FDR 1, EDR 2, HDR 4); 0 for SDR..QDR.
int ext_bit(Speed s) {
  return static_cast<int>(s) >> 4;
}

}  // namespace

std::string port_options(Link l) {
  // An extended speed needs the base speeds below it enabled as well (as a real port has them):
  // the link then runs at QDR as LinkSpeedActive and at the extended speed above it.
  if (ext_bit(l.speed) != 0) {
    return fmt::format("w={} s=7 e={}", static_cast<int>(l.width), ext_bit(l.speed));
  }
  return fmt::format("w={} s={}", static_cast<int>(l.width), static_cast<int>(l.speed));
}

double link_gbps(Link link) {
  return lanes(link.width) * lane_gbps(link.speed);
}

int link_rate_code(Link link) {
  // enum ibv_rate codes for the products of lanes and lane speed.
  double g = link_gbps(link);
  struct Code {
    double gbps;
    int code;
  };
  static constexpr Code kCodes[] = {{2.5, 2},  {5, 5},    {10, 3},   {20, 6},  {30, 4},   {40, 7},
                                    {60, 8},   {80, 9},   {120, 10}, {14, 11}, {28, 19},  {56, 12},
                                    {112, 13}, {168, 14}, {25, 15},  {50, 20}, {100, 16}, {200, 17},
                                    {300, 18}, {400, 21}, {600, 22}};
  for (const auto& c : kCodes)
    if (c.gbps == g) return c.code;
  throw std::invalid_argument(fmt::format("no IBA rate code for {} Gb/s", g));
}

const TopoNode& Topology::node(const std::string& id) const {
  for (const auto& n : nodes)
    if (n.id == id) return n;
  throw std::out_of_range("topology has no node '" + id + "'");
}

std::vector<const TopoNode*> Topology::cas() const {
  std::vector<const TopoNode*> out;
  for (size_t i = 1; i < nodes.size(); ++i)
    if (nodes[i].kind == NodeKind::kCa) out.push_back(&nodes[i]);
  return out;
}

const TopoNode& Topology::sm_node() const {
  return nodes.at(0);
}

FatTreeSpec mixed_speed_tree(int cas) {
  FatTreeSpec spec;
  spec.cas = cas;
  spec.ca_links = {
      {Width::k4x, Speed::kEdr},   // 100 Gb/s
      {Width::k4x, Speed::kFdr},   // 56
      {Width::k1x, Speed::kEdr},   // 25
      {Width::k8x, Speed::kHdr},   // 400
      {Width::k2x, Speed::kFdr},   // 28
      {Width::k4x, Speed::kQdr},   // 40
      {Width::k12x, Speed::kEdr},  // 300
      {Width::k4x, Speed::kHdr},   // 200
      {Width::k1x, Speed::kHdr},   // 50
      {Width::k12x, Speed::kFdr},  // 168
      {Width::k4x, Speed::kDdr},   // 20
  };
  spec.uplink = {Width::k12x, Speed::kHdr};
  spec.sm_link = {Width::k4x, Speed::kEdr};
  return spec;
}

Topology make_fat_tree(const FatTreeSpec& spec) {
  if (spec.cas < 1 || spec.cas_per_leaf < 1 || spec.spines < 1 || spec.ca_links.empty())
    throw std::invalid_argument("fat tree needs at least one CA, CA per leaf, spine and link");
  const int leaves = (spec.cas + spec.cas_per_leaf - 1) / spec.cas_per_leaf;
  // Leaf ports: 1 = sm01 (leaf01 only), 2..cas_per_leaf+1 = CAs, then one uplink per spine.
  const int leaf_ports = std::max(kMinSwitchPorts, 1 + spec.cas_per_leaf + spec.spines);
  const int spine_ports = std::max(kMinSwitchPorts, leaves);
  auto leaf_id = [](int l) { return fmt::format("leaf{:02d}", l + 1); };
  auto spine_id = [](int s) { return fmt::format("spine{:02d}", s + 1); };
  auto ca_id = [](int c) { return fmt::format("node{:03d}", c + 1); };
  auto uplink_port = [&](int s) { return 2 + spec.cas_per_leaf + s; };
  auto uplink = [&](int s) {
    return static_cast<size_t>(s) < spec.spine_uplinks.size()
               ? spec.spine_uplinks[static_cast<size_t>(s)]
               : spec.uplink;
  };

  Topology topo;
  uint64_t ca_guid = kCaGuidBase;
  uint64_t sw_guid = kSwitchGuidBase;

  auto add_ca = [&](const std::string& id, const std::string& desc, uint16_t lid,
                    const std::string& leaf, int leaf_port, Link link) {
    TopoNode n{id, desc, NodeKind::kCa, lid, ca_guid, ca_guid + 1, link, leaf};
    topo.netfile += fmt::format("caguid=0x{:x}\nCa 1 \"{}\" # \"{}\"\n[1] \"{}\"[{}] {} lid {}\n\n",
                                ca_guid, id, desc, leaf, leaf_port, port_options(link), lid);
    ca_guid += 0x10;
    topo.port_count += 2;
    topo.nodes.push_back(std::move(n));
  };

  if (spec.lmc < 0 || spec.lmc > 7) throw std::invalid_argument("LMC must be 0..7");
  auto lid_of = [&spec](int index) { return static_cast<uint16_t>(index << spec.lmc); };
  add_ca("sm01", "sm01 HCA-1", lid_of(1), leaf_id(0), 1, spec.sm_link);
  for (int c = 0; c < spec.cas; ++c) {
    Link link = spec.ca_links[static_cast<size_t>(c) % spec.ca_links.size()];
    add_ca(ca_id(c), ca_id(c) + " HCA-1", lid_of(2 + c), leaf_id(c / spec.cas_per_leaf),
           2 + c % spec.cas_per_leaf, link);
  }

  int index = 2 + spec.cas;
  for (int l = 0; l < leaves; ++l) {
    std::string id = leaf_id(l);
    const uint16_t lid = lid_of(index++);
    topo.netfile += fmt::format("switchguid=0x{:x}\nSwitch {} \"{}\" # \"{} switch\" lid {}\n",
                                sw_guid, leaf_ports, id, id, lid);
    if (l == 0) topo.netfile += fmt::format("[1] \"sm01\"[1] {}\n", port_options(spec.sm_link));
    for (int c = l * spec.cas_per_leaf; c < std::min(spec.cas, (l + 1) * spec.cas_per_leaf); ++c) {
      Link link = spec.ca_links[static_cast<size_t>(c) % spec.ca_links.size()];
      topo.netfile += fmt::format("[{}] \"{}\"[1] {}\n", 2 + c % spec.cas_per_leaf, ca_id(c),
                                  port_options(link));
    }
    for (int s = 0; s < spec.spines; ++s)
      topo.netfile += fmt::format("[{}] \"{}\"[{}] {}\n", uplink_port(s), spine_id(s), l + 1,
                                  port_options(uplink(s)));
    topo.netfile += "\n";
    topo.nodes.push_back(
        TopoNode{id, id + " switch", NodeKind::kSwitch, lid, sw_guid, sw_guid, {}, {}});
    topo.port_count += leaf_ports + 1;
    ++sw_guid;
  }
  for (int s = 0; s < spec.spines; ++s) {
    std::string id = spine_id(s);
    const uint16_t lid = lid_of(index++);
    topo.netfile += fmt::format("switchguid=0x{:x}\nSwitch {} \"{}\" # \"{} switch\" lid {}\n",
                                sw_guid, spine_ports, id, id, lid);
    for (int l = 0; l < leaves; ++l)
      topo.netfile += fmt::format("[{}] \"{}\"[{}] {}\n", l + 1, leaf_id(l), uplink_port(s),
                                  port_options(uplink(s)));
    topo.netfile += "\n";
    topo.nodes.push_back(
        TopoNode{id, id + " switch", NodeKind::kSwitch, lid, sw_guid, sw_guid, {}, {}});
    topo.port_count += spine_ports + 1;
    ++sw_guid;
  }
  return topo;
}

}  // namespace rdmaqos::testbed
