// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabrics with loops for ibsim: switches linked as any graph, and the shapes sites run (rings,
// tori, meshes, dragonfly-like groups, random graphs). See topology.h for the numbering.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::testbed {
namespace {

constexpr uint64_t kCaGuidBase = 0x0002c90300b00000ULL;
constexpr uint64_t kSwitchGuidBase = 0x0002c90300e00000ULL;
constexpr int kMinSwitchPorts = 8;

// Switch (i, j, k) of an x-by-y-by-z grid, and its links to (i+1, j, k), (i, j+1, k) and
// (i, j, k+1); with `wrap` the last of each line links back to the first. A dimension of radix 1
// has no links: z = 1 is the 2D grid, with its links in x, y order.
SwitchGraphSpec grid_spec(int x, int y, int z, int cas_per_switch, bool wrap) {
  if (x < 2 || y < 2 || z < 1 || (wrap && (x < 3 || y < 3 || z == 2)))
    throw std::invalid_argument("a torus needs 3 switches a dimension, a mesh 2");
  SwitchGraphSpec spec;
  spec.switches = x * y * z;
  spec.cas_per_switch = cas_per_switch;
  auto at = [x, y](int i, int j, int k) { return (k * y + j) * x + i; };
  for (int k = 0; k < z; ++k) {
    for (int j = 0; j < y; ++j) {
      for (int i = 0; i < x; ++i) {
        if (i + 1 < x || wrap) spec.links.emplace_back(at(i, j, k), at((i + 1) % x, j, k));
        if (j + 1 < y || wrap) spec.links.emplace_back(at(i, j, k), at(i, (j + 1) % y, k));
        if (z > 1 && (k + 1 < z || wrap))
          spec.links.emplace_back(at(i, j, k), at(i, j, (k + 1) % z));
      }
    }
  }
  return spec;
}

}  // namespace

SwitchGraphSpec ring_spec(int switches, int cas_per_switch) {
  if (switches < 3) throw std::invalid_argument("a ring needs at least 3 switches");
  SwitchGraphSpec spec;
  spec.switches = switches;
  spec.cas_per_switch = cas_per_switch;
  for (int s = 0; s < switches; ++s) spec.links.emplace_back(s, (s + 1) % switches);
  return spec;
}

SwitchGraphSpec torus_spec(int x, int y, int cas_per_switch) {
  return grid_spec(x, y, 1, cas_per_switch, true);
}

SwitchGraphSpec torus3d_spec(int x, int y, int z, int cas_per_switch) {
  if (z < 3) throw std::invalid_argument("a 3D torus needs 3 switches a dimension");
  return grid_spec(x, y, z, cas_per_switch, true);
}

SwitchGraphSpec mesh_spec(int x, int y, int cas_per_switch) {
  return grid_spec(x, y, 1, cas_per_switch, false);
}

SwitchGraphSpec dragonfly_spec(int groups, int per_group, int cas_per_switch) {
  if (groups < 2 || per_group < 1) throw std::invalid_argument("a dragonfly needs 2 groups");
  SwitchGraphSpec spec;
  spec.switches = groups * per_group;
  spec.cas_per_switch = cas_per_switch;
  for (int g = 0; g < groups; ++g) {
    for (int a = 0; a < per_group; ++a)
      for (int b = a + 1; b < per_group; ++b)
        spec.links.emplace_back(g * per_group + a, g * per_group + b);
  }
  // The global link between groups g < h leaves g from switch h % per_group and enters h at
  // switch g % per_group, so global links spread over each group's switches.
  for (int g = 0; g < groups; ++g)
    for (int h = g + 1; h < groups; ++h)
      spec.links.emplace_back(g * per_group + h % per_group, h * per_group + g % per_group);
  return spec;
}

SwitchGraphSpec random_spec(int switches, int extra_links, unsigned seed, int cas_per_switch) {
  if (switches < 2) throw std::invalid_argument("a random graph needs 2 switches");
  SwitchGraphSpec spec;
  spec.switches = switches;
  spec.cas_per_switch = cas_per_switch;
  std::mt19937 rng(seed);
  for (int s = 1; s < switches; ++s) {
    std::uniform_int_distribution<int> earlier(0, s - 1);
    spec.links.emplace_back(earlier(rng), s);
  }
  std::uniform_int_distribution<int> any(0, switches - 1);
  for (int added = 0; added < extra_links;) {
    int a = any(rng), b = any(rng);
    if (a == b) continue;
    spec.links.emplace_back(std::min(a, b), std::max(a, b));
    ++added;
  }
  return spec;
}

Topology make_switch_graph(const SwitchGraphSpec& spec) {
  if (spec.switches < 1 || spec.cas_per_switch < 0)
    throw std::invalid_argument("a switch graph needs a switch and no negative CA count");
  if (spec.lmc < 0 || spec.lmc > 7) throw std::invalid_argument("LMC must be 0..7");
  for (auto [a, b] : spec.links) {
    if (a < 0 || b < 0 || a >= spec.switches || b >= spec.switches || a == b)
      throw std::invalid_argument(fmt::format("link {}-{} names no pair of switches", a, b));
  }
  const int cas = spec.switches * spec.cas_per_switch;
  auto lid_of = [&spec](int index) { return static_cast<uint16_t>(index << spec.lmc); };
  auto sw_id = [](int s) { return fmt::format("sw{:02d}", s + 1); };
  auto ca_id = [](int c) { return fmt::format("node{:03d}", c + 1); };

  // Each switch's ports: [1] sm01 on switch 0, then its CAs, then its links in spec order.
  struct Port {
    std::string peer;
    int peer_port;
    Link link;
  };
  std::vector<std::vector<Port>> ports(static_cast<size_t>(spec.switches));
  ports[0].push_back({"sm01", 1, spec.ca_link});
  for (int c = 0; c < cas; ++c)
    ports[static_cast<size_t>(c / std::max(1, spec.cas_per_switch))].push_back(
        {ca_id(c), 1, spec.ca_link});
  for (auto [a, b] : spec.links) {
    auto& pa = ports[static_cast<size_t>(a)];
    auto& pb = ports[static_cast<size_t>(b)];
    const int port_a = static_cast<int>(pa.size()) + 1, port_b = static_cast<int>(pb.size()) + 1;
    pa.push_back({sw_id(b), port_b, spec.switch_link});
    pb.push_back({sw_id(a), port_a, spec.switch_link});
  }
  auto port_of = [&](int s, const std::string& ca) {
    const auto& ps = ports[static_cast<size_t>(s)];
    for (size_t p = 0; p < ps.size(); ++p)
      if (ps[p].peer == ca) return static_cast<int>(p) + 1;
    return 0;
  };

  Topology topo;
  uint64_t guid = kCaGuidBase;
  auto add_ca = [&](const std::string& id, uint16_t lid, int sw) {
    const std::string desc = id + " HCA-1";
    topo.netfile +=
        fmt::format("caguid=0x{:x}\nCa 1 \"{}\" # \"{}\"\n[1] \"{}\"[{}] {} lid {}\n\n", guid, id,
                    desc, sw_id(sw), port_of(sw, id), port_options(spec.ca_link), lid);
    topo.nodes.push_back(
        TopoNode{id, desc, NodeKind::kCa, lid, guid, guid + 1, spec.ca_link, sw_id(sw)});
    guid += 0x10;
    topo.port_count += 2;
  };
  add_ca("sm01", lid_of(1), 0);
  for (int c = 0; c < cas; ++c) add_ca(ca_id(c), lid_of(2 + c), c / spec.cas_per_switch);

  uint64_t sw_guid = kSwitchGuidBase;
  for (int s = 0; s < spec.switches; ++s) {
    const auto& ps = ports[static_cast<size_t>(s)];
    const int n = std::max(kMinSwitchPorts, static_cast<int>(ps.size()));
    if (n > 254) throw std::invalid_argument(fmt::format("{} needs {} ports", sw_id(s), n));
    const std::string id = sw_id(s);
    const uint16_t lid = lid_of(2 + cas + s);
    topo.netfile += fmt::format("switchguid=0x{:x}\nSwitch {} \"{}\" # \"{} switch\" lid {}\n",
                                sw_guid, n, id, id, lid);
    for (size_t p = 0; p < ps.size(); ++p)
      topo.netfile += fmt::format("[{}] \"{}\"[{}] {}\n", p + 1, ps[p].peer, ps[p].peer_port,
                                  port_options(ps[p].link));
    topo.netfile += "\n";
    topo.nodes.push_back(
        TopoNode{id, id + " switch", NodeKind::kSwitch, lid, sw_guid, sw_guid, {}, {}});
    topo.port_count += n + 1;
    ++sw_guid;
  }
  return topo;
}

}  // namespace rdmaqos::testbed
