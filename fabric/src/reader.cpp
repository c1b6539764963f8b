// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading the fabric's QoS tables. libibnetdisc gives the topology with every port's PortInfo
// (VLCap, OperVLs, VL high limit, VLArb capabilities, LMC); the tables themselves (one SL2VL
// table per input/output port pair on a switch: most of the SMPs) go through sa-responder's SMP
// window, many in flight.
#include "rdma-qos/fabric/reader.h"

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "rdma-qos/fabric/intended.h"
#include "smp_window.h"

namespace rdmaqos::fabric {
namespace {

struct FabricDeleter {
  void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};

// Where an answer goes.
struct Target {
  size_t node = 0;
  size_t port = 0;  // index in NodeTables::ports
  enum Kind { kSl2Vl, kLowA, kLowB, kHighA, kHighB } kind = kSl2Vl;
  uint8_t in = 0;
};

PortRef peer_ref(const ibnd_port_t* remote) {
  const ibnd_node_t* n = remote->node;
  PortRef r;
  r.node_guid = n->guid;
  r.type = static_cast<policy::NodeType>(n->type);
  r.port_guid = n->type == IB_NODE_SWITCH ? n->guid : remote->guid;
  r.description = n->nodedesc;
  r.port = static_cast<uint8_t>(remote->portnum);
  return r;
}

PortTables port_from_info(const uint8_t* info, uint8_t num, uint64_t guid) {
  PortTables p;
  p.port = num;
  p.guid = guid;
  std::copy_n(info, kSmpDataSize, p.raw_port_info.begin());
  p.info = *decode_port_info(p.raw_port_info);
  return p;
}

// Entries [0, min(cap, 32)) of block A, then cap % 32 entries of block B for cap > 32: what
// OpenSM writes (see cut_vlarb).
void add_vlarb(std::optional<VlArbTable>& table, const VlArbTable& block, bool second,
               uint8_t cap) {
  if (!table) table.emplace();
  const size_t n = second ? cap % kVlArbBlockEntries : std::min<size_t>(cap, kVlArbBlockEntries);
  table->insert(table->end(), block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

// The one port of the process, shared with rdma-qos-sad's discovery (the CLI links both).
ibmad_port* smp_port(const std::string& ca, int port) {
  return sad::smp_port(ca, port);
}

namespace {

// One LID-routed Get per entry, many in flight; one at a time where the port cannot do that.
std::vector<std::optional<sad::SmpData>> get_all(ibmad_port* mad,
                                                 const std::vector<sad::SmpGet>& gets,
                                                 const ReadOptions& options) {
  const int timeout = options.timeout_ms > 0 ? options.timeout_ms : 1000;
  const int attempts = std::max(options.attempts, 1);
  auto answers =
      sad::smp_get_window(mad, gets, std::max<size_t>(options.window, 1), timeout, attempts);
  if (answers) return std::move(*answers);
  std::vector<std::optional<sad::SmpData>> out(gets.size());
  for (size_t i = 0; i < gets.size(); ++i) {
    uint8_t buf[IB_SMP_DATA_SIZE];
    ib_portid_t id{};
    ib_portid_set(&id, gets[i].lid, 0, 0);
    for (int a = 0; a < attempts && !out[i]; ++a) {
      if (smp_query_via(buf, &id, gets[i].attr, gets[i].mod, static_cast<unsigned>(timeout), mad) !=
          nullptr) {
        out[i].emplace();
        std::copy_n(buf, kSmpDataSize, out[i]->begin());
      }
    }
  }
  return out;
}

std::string where(const NodeTables& node, const PortTables& p, const sad::SmpGet& g) {
  return fmt::format("{} ({:#x}) port {}: attribute {:#06x} modifier {:#x}", node.description,
                     node.guid, p.port, g.attr, g.mod);
}

// Every end port's and switch port 0's P_Key table, PartitionCap entries (NodeInfo) in blocks
// of 32, through the same window as the tables.
void read_pkeys(FabricTables& out, ibmad_port* mad, const ReadOptions& options) {
  constexpr uint32_t kMaxBlocks = 2048;  // 65536 entries: whatever PartitionCap a node claims
  std::vector<sad::SmpGet> gets;
  std::vector<std::pair<size_t, size_t>> at;  // (node, port) of each Get
  for (size_t ni = 0; ni < out.nodes.size(); ++ni) {
    const NodeTables& node = out.nodes[ni];
    const uint32_t blocks = std::clamp<uint32_t>(
        (node.partition_cap + kPKeyBlockEntries - 1) / kPKeyBlockEntries, 1, kMaxBlocks);
    for (size_t pi = 0; pi < node.ports.size(); ++pi) {
      const PortTables& p = node.ports[pi];
      if (node.type == policy::NodeType::kSwitch && p.port != 0) continue;
      if (p.info.lid == 0) continue;
      for (uint32_t b = 0; b < blocks; ++b) {
        gets.push_back({p.info.lid, kAttrPKeyTable, b});
        at.emplace_back(ni, pi);
      }
    }
  }
  if (options.progress) options.progress(fmt::format("reading {} P_Key blocks", gets.size()));
  auto answers = get_all(mad, gets, options);
  for (size_t i = 0; i < gets.size(); ++i) {
    NodeTables& node = out.nodes[at[i].first];
    PortTables& p = node.ports[at[i].second];
    if (!answers[i]) {
      out.unread.push_back(where(node, p, gets[i]));
      continue;
    }
    auto keys = *decode_pkey_block(*answers[i]);
    p.pkeys.insert(p.pkeys.end(), keys.begin(), keys.end());
  }
  for (auto& node : out.nodes) {
    for (auto& p : node.ports) {
      std::sort(p.pkeys.begin(), p.pkeys.end());
      p.pkeys.erase(std::unique(p.pkeys.begin(), p.pkeys.end()), p.pkeys.end());
    }
  }
  link_peer_pkeys(out);
}

}  // namespace

void read_tables(FabricTables& out, const ReadOptions& options, bool refresh_port_info) {
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) {
    out.unread.push_back("cannot open the port for SMPs");
    return;
  }
  std::vector<sad::SmpGet> gets;
  std::vector<Target> targets;
  if (refresh_port_info) {
    for (size_t ni = 0; ni < out.nodes.size(); ++ni) {
      for (size_t pi = 0; pi < out.nodes[ni].ports.size(); ++pi) {
        const PortTables& p = out.nodes[ni].ports[pi];
        if (p.info.lid == 0) continue;
        gets.push_back({p.info.lid, kAttrPortInfo, p.port});
        targets.push_back({ni, pi, Target::kSl2Vl, 0});
      }
    }
    auto answers = get_all(mad, gets, options);
    for (size_t i = 0; i < gets.size(); ++i) {
      NodeTables& node = out.nodes[targets[i].node];
      PortTables& p = node.ports[targets[i].port];
      if (!answers[i]) {
        out.unread.push_back(where(node, p, gets[i]));
        continue;
      }
      const uint16_t lid = p.info.lid;
      p.raw_port_info = *answers[i];
      p.info = *decode_port_info(p.raw_port_info);
      if (node.type == policy::NodeType::kSwitch) p.info.lid = lid;  // external ports have none
    }
    gets.clear();
    targets.clear();
  }
  for (size_t ni = 0; ni < out.nodes.size(); ++ni) {
    NodeTables& node = out.nodes[ni];
    const bool is_switch = node.type == policy::NodeType::kSwitch;
    for (size_t pi = 0; pi < node.ports.size(); ++pi) {
      PortTables& p = node.ports[pi];
      p.sl2vl.clear();
      p.vlarb_high.reset();
      p.vlarb_low.reset();
      if (!programmed(node, p)) continue;
      const uint16_t lid = p.info.lid;
      if (lid == 0) {
        out.unread.push_back(fmt::format("{} port {}: no LID", node.description, p.port));
        continue;
      }
      if (p.sl_mapping) {
        for (uint8_t in : sl2vl_inputs(node, p)) {
          const uint32_t mod =
              is_switch && p.port != 0 ? static_cast<uint32_t>(in << 8 | p.port) : 0;
          gets.push_back({lid, kAttrSl2Vl, mod});
          targets.push_back({ni, pi, Target::kSl2Vl, in});
        }
      }
      if (p.info.vl_cap <= 1) continue;
      // Switch external ports name themselves in the modifier; end ports and port 0 use 0.
      const uint32_t port_mod = is_switch ? p.port : 0;
      auto want = [&](uint32_t block, Target::Kind kind) {
        gets.push_back({lid, kAttrVlArb, block << 16 | port_mod});
        targets.push_back({ni, pi, kind, 0});
      };
      if (p.info.vlarb_low_cap > 0) want(1, Target::kLowA);
      if (p.info.vlarb_low_cap > kVlArbBlockEntries) want(2, Target::kLowB);
      if (p.info.vlarb_high_cap > 0) want(3, Target::kHighA);
      if (p.info.vlarb_high_cap > kVlArbBlockEntries) want(4, Target::kHighB);
    }
  }
  if (options.progress) {
    options.progress(
        fmt::format("{} nodes: reading {} SL2VL and VLArb blocks", out.nodes.size(), gets.size()));
  }
  // In tenths, so a large fabric shows progress; each tenth keeps the window full.
  std::vector<std::optional<sad::SmpData>> answers;
  answers.reserve(gets.size());
  const size_t step = std::max<size_t>(gets.size() / 10, 256);
  for (size_t from = 0; from < gets.size(); from += step) {
    const size_t to = std::min(gets.size(), from + step);
    std::vector<sad::SmpGet> part(gets.begin() + static_cast<std::ptrdiff_t>(from),
                                  gets.begin() + static_cast<std::ptrdiff_t>(to));
    auto got = get_all(mad, part, options);
    answers.insert(answers.end(), got.begin(), got.end());
    if (options.progress && to < gets.size())
      options.progress(fmt::format("blocks: {}/{}", to, gets.size()));
  }
  for (size_t i = 0; i < gets.size(); ++i) {
    const Target& t = targets[i];
    NodeTables& node = out.nodes[t.node];
    PortTables& p = node.ports[t.port];
    if (!answers[i]) {
      out.unread.push_back(where(node, p, gets[i]));
      continue;
    }
    const auto& data = *answers[i];
    switch (t.kind) {
      case Target::kSl2Vl: p.sl2vl[t.in] = *decode_sl2vl(data); break;
      case Target::kLowA:
        add_vlarb(p.vlarb_low, *decode_vlarb_block(data), false, p.info.vlarb_low_cap);
        break;
      case Target::kLowB:
        add_vlarb(p.vlarb_low, *decode_vlarb_block(data), true, p.info.vlarb_low_cap);
        break;
      case Target::kHighA:
        add_vlarb(p.vlarb_high, *decode_vlarb_block(data), false, p.info.vlarb_high_cap);
        break;
      case Target::kHighB:
        add_vlarb(p.vlarb_high, *decode_vlarb_block(data), true, p.info.vlarb_high_cap);
        break;
    }
  }
}

Result<FabricTables> read_fabric(const ReadOptions& options) {
  // libibnetdisc opens and closes a port of its own: before ours is opened, since umad2sim
  // crashes a process that receives on a port after closing another.
  ibnd_config_t config{};
  config.timeout_ms = static_cast<unsigned>(options.timeout_ms);
  std::unique_ptr<ibnd_fabric_t, FabricDeleter> fabric(
      ibnd_discover_fabric(options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str()),
                           options.port, nullptr, &config));
  if (!fabric)
    return make_error(ErrorCode::kTransport, "libibnetdisc could not discover the fabric");
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) return make_error(ErrorCode::kTransport, "cannot open the port for SMPs");

  FabricTables out;
  for (ibnd_node_t* n = fabric->nodes; n != nullptr; n = n->next) {
    NodeTables node;
    node.guid = n->guid;
    node.type = static_cast<policy::NodeType>(n->type);
    node.description = n->nodedesc;
    node.num_ports = n->numports;
    node.partition_cap = static_cast<uint16_t>(mad_get_field(n->info, 0, IB_NODE_PARTITION_CAP_F));
    const bool is_switch = n->type == IB_NODE_SWITCH;
    uint32_t p0_capmask = 0;
    if (is_switch) {
      node.enhanced_port0 = mad_get_field(n->switchinfo, 0, IB_SW_ENHANCED_PORT0_F) != 0;
      uint8_t buf[IB_SMP_DATA_SIZE] = {};
      const uint8_t* info = nullptr;
      if (n->ports[0] != nullptr) {
        info = n->ports[0]->info;
      } else {
        ib_portid_t id{};
        ib_portid_set(&id, n->smalid, 0, 0);
        if (smp_query_via(buf, &id, IB_ATTR_PORT_INFO, 0, 0, mad) != nullptr) info = buf;
      }
      if (info == nullptr) {
        out.unread.push_back(fmt::format("PortInfo of switch {:#x} port 0", n->guid));
        continue;
      }
      PortTables p0 = port_from_info(info, 0, n->guid);
      p0_capmask = p0.info.capability_mask;
      p0.sl_mapping = (p0_capmask & kCapSlMapping) != 0;
      node.ports.push_back(p0);
    }
    for (int pn = 1; pn <= n->numports; ++pn) {
      ibnd_port_t* port = n->ports[pn];
      if (port == nullptr) continue;
      PortTables p =
          port_from_info(port->info, static_cast<uint8_t>(pn), is_switch ? n->guid : port->guid);
      if (is_switch) {
        p.info.lid = n->smalid;
        p.sl_mapping = (p0_capmask & kCapSlMapping) != 0;
      } else {
        p.sl_mapping = (p.info.capability_mask & kCapSlMapping) != 0;
      }
      if (port->remoteport != nullptr) p.peer = peer_ref(port->remoteport);
      node.ports.push_back(p);
    }
    out.nodes.push_back(std::move(node));
  }
  if (fabric->from_node != nullptr) {
    const ibnd_node_t* f = fabric->from_node;
    const ibnd_port_t* fp = f->type == IB_NODE_SWITCH ? nullptr : f->ports[fabric->from_portnum];
    out.sm_port_guid = f->type == IB_NODE_SWITCH ? f->guid : fp != nullptr ? fp->guid : 0;
  }
  if (options.progress) options.progress(fmt::format("topology: {} nodes", out.nodes.size()));
  if (options.pkeys) read_pkeys(out, mad, options);
  read_tables(out, options, false);
  return out;
}

}  // namespace rdmaqos::fabric
