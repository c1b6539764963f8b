// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Intended tables per port: the class tables OpenSM would program, the policy's scopes over
// them, cut to the port as OpenSM cuts what it writes (so a port OpenSM programmed from the
// same opensm.conf shows no difference).
#include "rdma-qos/fabric/intended.h"

#include <fmt/format.h>

#include <algorithm>

namespace rdmaqos::fabric {
namespace {

// OpenSM keeps the VL bits the operational VLs allow: VL & (2^(OperVLs-1) - 1).
uint8_t vl_mask(uint8_t oper_vls) {
  if (oper_vls == 0) return 0;
  return static_cast<uint8_t>((1u << (std::min<uint8_t>(oper_vls, 5) - 1)) - 1);
}

size_t vlarb_length(uint8_t cap) {
  size_t len = std::min<size_t>(cap, kVlArbBlockEntries);
  if (cap > kVlArbBlockEntries) len += cap % kVlArbBlockEntries;
  return len;
}

size_t weighted(const VlArbTable& t) {
  size_t last = 0;
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].weight != 0) last = i + 1;
  return last;
}

std::string class_source(policy::PortClass c) {
  return fmt::format("opensm.conf qos_{}", policy::port_class_prefix(c));
}

std::string where(rdmaqos::SourceLocation l) {
  return fmt::format("policy line {}", l.line);
}

}  // namespace

Sl2Vl mask_sl2vl(const Sl2Vl& table, uint8_t oper_vls) {
  Sl2Vl out{};
  const uint8_t mask = vl_mask(oper_vls);
  for (size_t sl = 0; sl < out.size(); ++sl)
    out[sl] = table[sl] == 15 ? 15 : static_cast<uint8_t>(table[sl] & mask);
  return out;
}

VlArbTable cut_vlarb(const VlArbTable& table, uint8_t cap, uint8_t oper_vls) {
  VlArbTable out;
  const uint8_t mask = vl_mask(oper_vls);
  const size_t first = std::min<size_t>(cap, kVlArbBlockEntries);
  auto at = [&](size_t i) {
    policy::VlArbEntry e = i < table.size() ? table[i] : policy::VlArbEntry{};
    e.vl = static_cast<uint8_t>(e.vl & mask);
    return e;
  };
  for (size_t i = 0; i < first; ++i) out.push_back(at(i));
  if (cap > kVlArbBlockEntries)
    for (size_t i = 0; i < cap % kVlArbBlockEntries; ++i) out.push_back(at(kVlArbBlockEntries + i));
  return out;
}

std::vector<uint8_t> sl2vl_inputs(const NodeTables& node, const PortTables& out) {
  if (node.type != policy::NodeType::kSwitch || out.port == 0) return {0};
  std::vector<uint8_t> in;
  for (int i = 0; i <= node.num_ports; ++i) in.push_back(static_cast<uint8_t>(i));
  return in;
}

bool programmed(const NodeTables& node, const PortTables& port) {
  if (port.info.state <= 1) return false;  // link down: OpenSM skips it
  if (node.type == policy::NodeType::kSwitch && port.port == 0) return node.enhanced_port0;
  return true;
}

Planner::Planner(policy::QosConfig conf, std::optional<SetupScopes> scopes)
    : conf_(std::move(conf)), scopes_(std::move(scopes)) {}

IntendedPort Planner::plan(const NodeTables& node, const PortTables& port,
                           const std::function<std::optional<PortRef>(uint8_t)>& peer_of) const {
  IntendedPort out;
  const policy::PortClass cls = port_class(node.type, port.port);
  const policy::QosPortConfig& base = conf_.port(cls);
  const PortRef self = node.ref(port);
  const uint8_t oper = port.info.oper_vls;
  const int vls = data_vls(oper);

  auto note_vls = [&](const std::string& what, const std::string& source, auto vls_used) {
    for (uint8_t vl : vls_used) {
      if (vl != 15 && vls > 0 && vl >= vls) {
        out.too_long.push_back(fmt::format("{} ({}) uses VL {}; the port runs {} data VL{}", what,
                                           source, vl, vls, vls == 1 ? "" : "s"));
        return;
      }
    }
  };

  if (port.sl_mapping) {
    for (uint8_t in : sl2vl_inputs(node, port)) {
      Sl2Vl table = base.sl2vl;
      std::string source = class_source(cls) + "_sl2vl";
      if (scopes_) {
        Sl2VlSite site{self, port.peer, in, in == 0 ? std::nullopt : peer_of(in)};
        if (auto c = scopes_->sl2vl(site)) {
          table = c->table;
          source = where(c->scope);
        }
      }
      if (out.sl2vl_source.empty() || in == 0)
        note_vls("sl2vl", source, std::vector<uint8_t>(table.begin(), table.end()));
      out.sl2vl[in] = mask_sl2vl(table, oper);
      out.sl2vl_source[in] = source;
    }
  }

  VlArbTable high = base.vlarb_high, low = base.vlarb_low;
  uint8_t limit = static_cast<uint8_t>(base.high_limit);
  std::string high_src = class_source(cls) + "_vlarb_high";
  std::string low_src = class_source(cls) + "_vlarb_low";
  out.vlarb_source = class_source(cls);
  if (scopes_) {
    if (auto c = scopes_->vlarb(self, port.peer)) {
      if (c->has_high) high = c->high, high_src = where(c->scope);
      if (c->has_low) low = c->low, low_src = where(c->scope);
      if (c->high_limit) limit = *c->high_limit;
      out.vlarb_source = where(c->scope);
    }
  }
  if (port.info.vl_cap == 1) {
    out.vl_high_limit = 0;  // OpenSM: no arbitration with one data VL
    return out;
  }
  out.vl_high_limit = limit;
  auto check_len = [&](const char* name, const VlArbTable& t, uint8_t cap, const std::string& src) {
    if (weighted(t) > vlarb_length(cap)) {
      out.too_long.push_back(fmt::format("{} ({}) has {} entries; the port holds {}", name, src,
                                         weighted(t), vlarb_length(cap)));
    }
    std::vector<uint8_t> used;
    for (const auto& e : t)
      if (e.weight != 0) used.push_back(e.vl);
    note_vls(name, src, used);
  };
  check_len("vlarb-high", high, port.info.vlarb_high_cap, high_src);
  check_len("vlarb-low", low, port.info.vlarb_low_cap, low_src);
  out.vlarb_high = cut_vlarb(high, port.info.vlarb_high_cap, oper);
  out.vlarb_low = cut_vlarb(low, port.info.vlarb_low_cap, oper);
  return out;
}

}  // namespace rdmaqos::fabric
