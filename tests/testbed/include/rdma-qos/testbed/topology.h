// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric descriptions for ibsim: a two-level fat-tree generator whose links mix widths and
// speeds (so path rates differ) and whose LIDs and GUIDs are fixed in the file (so tests know
// them without asking the SM).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmaqos::testbed {

// ibsim's per-port enabled width / speed bit masks (IBA PortInfo LinkWidthEnabled /
// LinkSpeedEnabled, and LinkSpeedExtEnabled for FDR and faster). The active value is the
// highest bit both ends enable. Debian's ibsim 0.10 simulates FDR, EDR and HDR (no NDR).
enum class Width : int { k1x = 1, k4x = 2, k8x = 4, k12x = 8, k2x = 16 };
enum class Speed : int { kSdr = 1, kDdr = 2, kQdr = 4, kFdr = 0x10, kEdr = 0x20, kHdr = 0x40 };

struct Link {
  Width width = Width::k4x;
  Speed speed = Speed::kQdr;
};

// Gb/s of an active link (the IBA names: 14 per FDR lane, 25 per EDR lane, 50 per HDR lane),
// and its IBA rate code (enum ibv_rate).
double link_gbps(Link link);
int link_rate_code(Link link);
// ibsim's port options for a link: "w=2 s=4" (QDR), "w=2 s=7 e=2" (EDR).
std::string port_options(Link link);

enum class NodeKind { kCa, kSwitch };

struct TopoNode {
  std::string id;           // ibsim node id: what SIM_HOST names
  std::string description;  // NodeDescription, e.g. "node017 HCA-1"
  NodeKind kind = NodeKind::kCa;
  uint16_t lid = 0;
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;  // port 1 for a CA, port 0 for a switch
  Link link;               // a CA's link to its leaf (both ends enable the same)
  std::string leaf;        // a CA's leaf switch id
};

struct Topology {
  std::string netfile;  // ibsim's topology text
  std::vector<TopoNode> nodes;
  int port_count = 0;  // ports ibsim allocates (a switch's port 0 included); 0: not known

  const TopoNode& node(const std::string& id) const;  // throws std::out_of_range
  std::vector<const TopoNode*> cas() const;           // compute CAs, the SM's CA excluded
  const TopoNode& sm_node() const;                    // the first node: where OpenSM runs
};

struct FatTreeSpec {
  int cas = 8;  // compute CAs "node001".."nodeNNN"
  int cas_per_leaf = 4;
  int spines = 2;
  // Links of compute CAs, assigned round-robin, so neighbouring nodes get different rates.
  std::vector<Link> ca_links = {
      {Width::k4x, Speed::kQdr},   // 40 Gb/s
      {Width::k4x, Speed::kDdr},   // 20 Gb/s
      {Width::k1x, Speed::kSdr},   // 2.5 Gb/s
      {Width::k4x, Speed::kSdr},   // 10 Gb/s
      {Width::k12x, Speed::kDdr},  // 60 Gb/s
  };
  Link uplink = {Width::k4x, Speed::kQdr};
  // Links of spine s (leaf to spine s, both ends) when given; others (or all, when empty) use
  // `uplink`. Spines of different rates make the LIDs of one port (LMC > 0), which OpenSM
  // routes over different spines, show different path rates.
  std::vector<Link> spine_uplinks = {};
  Link sm_link = {Width::k4x, Speed::kQdr};
  // LIDs spaced and aligned for this LMC (the i-th node gets i << lmc), so OpenSM run with the
  // same LMC (IbFabricOptions::lmc) keeps them.
  int lmc = 0;
};

// A fabric of every speed ibsim simulates: CA links of FDR, EDR and HDR at 1x..12x mixed
// with QDR and DDR ones, switches linked at 12x HDR (600 Gb/s) so the CA links decide.
FatTreeSpec mixed_speed_tree(int cas = 8);

// The SM's CA "sm01" comes first (ibsim makes the first port the SM port), on leaf01.
// LIDs: sm01 = 1, nodeNNN = 1 + NNN, then leaves, then spines.
Topology make_fat_tree(const FatTreeSpec& spec);

// A fabric of switches linked as any graph (rings, tori, meshes, dragonfly-like groups, random
// graphs): the fabrics with loops where routing engines such as LASH, DFSSSP and Nue give paths
// different SLs. Every switch carries `cas_per_switch` compute CAs; sm01 hangs off switch 0.
struct SwitchGraphSpec {
  int switches = 6;
  std::vector<std::pair<int, int>> links;  // switch index pairs; a pair may repeat (parallel)
  int cas_per_switch = 2;
  Link ca_link = {Width::k4x, Speed::kQdr};
  Link switch_link = {Width::k4x, Speed::kQdr};
  int lmc = 0;  // as FatTreeSpec::lmc
};

// A ring of `switches` (at least 3).
SwitchGraphSpec ring_spec(int switches, int cas_per_switch = 2);
// An x-by-y torus (wrap-around links in both dimensions; each dimension at least 3), switch
// (i, j) at index j * x + i.
SwitchGraphSpec torus_spec(int x, int y, int cas_per_switch = 1);
// An x-by-y-by-z torus (each dimension at least 3), switch (i, j, k) at index (k * y + j) * x + i.
SwitchGraphSpec torus3d_spec(int x, int y, int z, int cas_per_switch = 1);
// An x-by-y mesh (no wrap-around), numbered as the torus.
SwitchGraphSpec mesh_spec(int x, int y, int cas_per_switch = 1);
// `groups` groups of `per_group` switches, all-to-all inside a group, and one global link
// between every two groups (dragonfly-like).
SwitchGraphSpec dragonfly_spec(int groups, int per_group, int cas_per_switch = 1);
// A connected random graph: a random spanning tree plus `extra_links`, from `seed`.
SwitchGraphSpec random_spec(int switches, int extra_links, unsigned seed, int cas_per_switch = 1);

// Names: sm01 (LID 1), then node001.. (switch s carries node s*cas_per_switch+1 onwards), then
// switches sw01.. . Switch ports: CAs first (switch 0: sm01 on port 1), then links in order.
Topology make_switch_graph(const SwitchGraphSpec& spec);

}  // namespace rdmaqos::testbed
