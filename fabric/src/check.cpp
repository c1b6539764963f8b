// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Comparing what the ports hold with what they should hold, and the levels with both.
#include "rdma-qos/fabric/check.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace rdmaqos::fabric {
namespace {

PortAt at_of(const NodeTables& n, const PortTables& p) {
  return {n.guid, n.description, p.port, p.info.lid};
}

// The weight a VL gets from a port's tables as read (both priorities).
unsigned weight_of(const PortTables& p, uint8_t vl) {
  unsigned w = 0;
  for (const auto* t : {&p.vlarb_high, &p.vlarb_low})
    if (*t)
      for (const auto& e : **t)
        if (e.vl == vl) w += e.weight;
  return w;
}

}  // namespace

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::kDifference: return "difference";
    case FindingKind::kLevelDropped: return "level-dropped";
    case FindingKind::kLevelNoWeight: return "level-no-weight";
    case FindingKind::kTooLong: return "too-long";
    case FindingKind::kUnread: return "unread";
  }
  return "?";
}

size_t CheckReport::differences() const {
  size_t n = 0;
  for (const auto& f : findings)
    if (f.kind != FindingKind::kTooLong) ++n;
  return n;
}

int CheckReport::exit_code() const {
  for (const auto& f : findings)
    if (f.kind == FindingKind::kUnread) return 2;
  return differences() == 0 ? 0 : 1;
}

std::string sl2vl_text(const Sl2Vl& t) {
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) s += fmt::format("{}{}", i ? "," : "", t[i]);
  return s;
}

std::string vlarb_text(const VlArbTable& t) {
  std::string s;
  size_t last = 0;  // trailing (0, 0) entries say nothing
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].vl != 0 || t[i].weight != 0) last = i + 1;
  for (size_t i = 0; i < last; ++i) s += fmt::format("{}{}:{}", i ? "," : "", t[i].vl, t[i].weight);
  return s.empty() ? "(empty)" : s;
}

std::vector<std::pair<std::string, uint8_t>> policy_level_sls(const policy::Policy& policy) {
  std::vector<std::pair<std::string, uint8_t>> out;
  for (const auto& l : policy.levels) out.emplace_back(l.name, l.sl);
  std::set<uint8_t> ulp;
  for (const auto& r : policy.ulp_rules)
    if (r.ulp_sl) ulp.insert(*r.ulp_sl);
  if (policy.ulp_default_sl && policy.default_level() == nullptr)
    out.emplace_back("SimpleQoSLevel_DEFAULT", *policy.ulp_default_sl);
  for (uint8_t sl : ulp) out.emplace_back(fmt::format("SimpleQoSLevel_SL{}", sl), sl);
  return out;
}

CheckReport check_fabric(const FabricTables& fabric, const Planner& planner,
                         const std::vector<std::pair<std::string, uint8_t>>& levels) {
  CheckReport r;
  // Too-long notes repeat on every port of a class: one finding per text, with its ports.
  std::map<std::string, Finding> too_long;
  std::map<std::pair<size_t, FindingKind>, Finding> level_findings;

  for (const auto& u : fabric.unread) {
    Finding f;
    f.kind = FindingKind::kUnread;
    f.message = u;
    r.findings.push_back(f);
  }
  for (const auto& node : fabric.nodes) {
    auto peer_of = [&node](uint8_t in) -> std::optional<PortRef> {
      const PortTables* p = node.find(in);
      return p ? p->peer : std::nullopt;
    };
    for (const auto& port : node.ports) {
      if (!programmed(node, port)) continue;
      ++r.ports;
      const PortAt at = at_of(node, port);
      const IntendedPort want = planner.plan(node, port, peer_of);
      for (const auto& text : want.too_long) {
        auto [it, fresh] = too_long.try_emplace(text);
        if (fresh) {
          it->second.kind = FindingKind::kTooLong;
          it->second.at = at;
          it->second.message = text;
        }
        it->second.ports.push_back(at);
      }
      for (const auto& [in, table] : want.sl2vl) {
        ++r.tables;
        auto got = port.sl2vl.find(in);
        if (got == port.sl2vl.end()) continue;  // listed in fabric.unread
        if (got->second != table) {
          r.findings.push_back({FindingKind::kDifference,
                                at,
                                fmt::format("sl2vl {}->{}", in, port.port),
                                sl2vl_text(table),
                                sl2vl_text(got->second),
                                want.sl2vl_source.at(in),
                                "",
                                {}});
        }
      }
      auto cmp_vlarb = [&](const char* name, const std::optional<VlArbTable>& w,
                           const std::optional<VlArbTable>& g) {
        if (!w) return;
        ++r.tables;
        if (!g) return;
        if (!same_vlarb(*w, *g)) {
          r.findings.push_back({FindingKind::kDifference,
                                at,
                                name,
                                vlarb_text(*w),
                                vlarb_text(*g),
                                want.vlarb_source,
                                "",
                                {}});
        }
      };
      cmp_vlarb("vlarb-high", want.vlarb_high, port.vlarb_high);
      cmp_vlarb("vlarb-low", want.vlarb_low, port.vlarb_low);
      if (want.vlarb_high && want.vl_high_limit != port.info.vl_high_limit) {
        r.findings.push_back({FindingKind::kDifference,
                              at,
                              "vl-high-limit",
                              std::to_string(want.vl_high_limit),
                              std::to_string(port.info.vl_high_limit),
                              want.vlarb_source,
                              "",
                              {}});
      }

      // The levels against what the port actually holds.
      const bool arbitrates = port.info.vl_cap > 1 && (port.vlarb_high || port.vlarb_low);
      for (size_t li = 0; li < levels.size(); ++li) {
        const auto& [name, sl] = levels[li];
        if (sl > 15) continue;
        for (const auto& [in, table] : port.sl2vl) {
          const uint8_t vl = table[sl];
          FindingKind kind;
          std::string msg;
          if (vl == 15) {
            kind = FindingKind::kLevelDropped;
            msg = fmt::format("level {} (SL {}) is mapped to VL 15 (dropped)", name, sl);
          } else if (arbitrates && weight_of(port, vl) == 0) {
            kind = FindingKind::kLevelNoWeight;
            msg = fmt::format("level {} (SL {}) goes to VL {}, which has no arbitration weight",
                              name, sl, vl);
          } else {
            continue;
          }
          auto [it, fresh] = level_findings.try_emplace({li, kind});
          if (fresh) {
            it->second.kind = kind;
            it->second.at = at;
            it->second.table = fmt::format("sl2vl {}->{}", in, port.port);
            it->second.message = msg;
          }
          if (it->second.ports.empty() || it->second.ports.back().node_guid != at.node_guid ||
              it->second.ports.back().port != at.port)
            it->second.ports.push_back(at);
        }
      }
    }
  }
  for (auto& [k, f] : level_findings) r.findings.push_back(std::move(f));
  for (auto& [k, f] : too_long) r.findings.push_back(std::move(f));
  return r;
}

}  // namespace rdmaqos::fabric
