// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Shares per SL from the tables read: policy::analyze_vlarb gives each VL's share of the link
// under saturation; SLs that share a VL split it evenly (each saturating its own flow).
#include "rdma-qos/fabric/share.h"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "rdma-qos/fabric/intended.h"

namespace rdmaqos::fabric {
namespace {

// What decides a port's shares, comparable so the most common set can be picked.
using Key = std::tuple<Sl2Vl, std::vector<std::pair<uint8_t, uint8_t>>,
                       std::vector<std::pair<uint8_t, uint8_t>>, uint8_t, bool>;

std::vector<std::pair<uint8_t, uint8_t>> pairs(const std::optional<VlArbTable>& t) {
  std::vector<std::pair<uint8_t, uint8_t>> out;
  if (t)
    for (const auto& e : *t) out.emplace_back(e.vl, e.weight);
  return out;
}

ClassShare shares_of(const Key& k) {
  const auto& [sl2vl, high, low, limit, arbitrates] = k;
  ClassShare c;
  std::map<uint8_t, double> vl_share;
  if (arbitrates) {
    policy::QosPortConfig conf;
    conf.high_limit = limit;
    for (auto [vl, w] : high) conf.vlarb_high.push_back({vl, w});
    for (auto [vl, w] : low) conf.vlarb_low.push_back({vl, w});
    const auto a = policy::analyze_vlarb(conf);
    for (const auto& v : a.vls) vl_share[v.vl] = v.share;
    c.high_fraction = a.high_fraction;
  } else {
    vl_share[0] = 1.0;  // one data VL: no arbitration
  }
  std::map<uint8_t, int> sls_on_vl;
  for (uint8_t vl : sl2vl) sls_on_vl[vl]++;
  for (uint8_t sl = 0; sl < 16; ++sl) {
    const uint8_t vl = sl2vl[sl];
    const double share = vl == 15 || !vl_share.contains(vl) ? 0.0 : vl_share[vl] / sls_on_vl[vl];
    c.sls.push_back({sl, vl, share});
  }
  return c;
}

}  // namespace

ShareView share_view(const FabricTables& fabric) {
  std::map<policy::PortClass, std::map<Key, size_t>> seen;
  for (const auto& node : fabric.nodes) {
    for (const auto& p : node.ports) {
      if (!programmed(node, p) || p.sl2vl.empty()) continue;
      const bool arbitrates = p.info.vl_cap > 1 && (p.vlarb_high || p.vlarb_low);
      Key k{p.sl2vl.begin()->second, pairs(p.vlarb_high), pairs(p.vlarb_low), p.info.vl_high_limit,
            arbitrates};
      seen[port_class(node.type, p.port)][k]++;
    }
  }
  ShareView v;
  for (policy::PortClass cls : policy::kPortClasses) {
    auto it = seen.find(cls);
    if (it == seen.end()) continue;
    const Key* best = nullptr;
    size_t best_n = 0, total = 0;
    for (const auto& [k, n] : it->second) {
      total += n;
      if (n > best_n) best = &k, best_n = n;
    }
    ClassShare c = shares_of(*best);
    c.port_class = cls;
    c.ports = total;
    c.others = total - best_n;
    v.classes.push_back(std::move(c));
  }
  return v;
}

nlohmann::json to_json(const ShareView& view) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : view.classes) {
    nlohmann::json sls = nlohmann::json::array();
    for (const auto& s : c.sls) sls.push_back({{"sl", s.sl}, {"vl", s.vl}, {"share", s.share}});
    classes.push_back({{"class", policy::port_class_prefix(c.port_class)},
                       {"ports", c.ports},
                       {"ports_with_other_tables", c.others},
                       {"high_priority_fraction", c.high_fraction},
                       {"sls", std::move(sls)}});
  }
  return {{"classes", std::move(classes)}};
}

std::vector<std::string> to_lines(const ShareView& view) {
  std::vector<std::string> out;
  std::string head = "SL ";
  for (const auto& c : view.classes)
    head += fmt::format(" {:>12}", fmt::format("{} (VL)", policy::port_class_prefix(c.port_class)));
  out.push_back(head);
  for (uint8_t sl = 0; sl < 16; ++sl) {
    std::string line = fmt::format("{:>2} ", sl);
    for (const auto& c : view.classes) {
      const auto& s = c.sls[sl];
      line += s.vl == 15 ? fmt::format(" {:>12}", "dropped")
                         : fmt::format(" {:>7.1f}% ({:>2})", 100 * s.share, s.vl);
    }
    out.push_back(line);
  }
  for (const auto& c : view.classes) {
    out.push_back(fmt::format(
        "{}: {} port{}{}", policy::port_class_prefix(c.port_class), c.ports,
        c.ports == 1 ? "" : "s",
        c.others == 0 ? "" : fmt::format(", {} with other tables (not shown)", c.others)));
  }
  return out;
}

}  // namespace rdmaqos::fabric
