// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The PortInfo fields the check read, per port, for `check --ports`.
#include <fmt/format.h>

#include "rdma-qos/fabric/check.h"

namespace rdmaqos::fabric {
namespace {

std::string vls_text(uint8_t code) {
  const int n = data_vls(code);
  return n == 0 ? fmt::format("?({})", code) : n == 1 ? "VL0" : fmt::format("VL0-{}", n - 1);
}

}  // namespace

nlohmann::json ports_json(const FabricTables& fabric) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : fabric.nodes) {
    for (const auto& p : n.ports) {
      out.push_back({{"node_guid", fmt::format("{:#018x}", n.guid)},
                     {"node", n.description},
                     {"port", p.port},
                     {"lid", p.info.lid},
                     {"lmc", p.info.lmc},
                     {"state", p.info.state},
                     {"vl_cap", vls_text(p.info.vl_cap)},
                     {"oper_vls", vls_text(p.info.oper_vls)},
                     {"vl_high_limit", p.info.vl_high_limit},
                     {"vlarb_high_cap", p.info.vlarb_high_cap},
                     {"vlarb_low_cap", p.info.vlarb_low_cap},
                     {"sl_mapping", p.sl_mapping}});
    }
  }
  return out;
}

std::vector<std::string> ports_lines(const FabricTables& fabric) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{:<24} {:>4} {:>5} {:>3} {:>7} {:>7} {:>5} {:>9}", "node", "port",
                            "lid", "lmc", "vlcap", "opervls", "limit", "arb h/l"));
  for (const auto& n : fabric.nodes) {
    for (const auto& p : n.ports) {
      if (p.info.state <= 1) continue;
      out.push_back(fmt::format(
          "{:<24} {:>4} {:>5} {:>3} {:>7} {:>7} {:>5} {:>9}", n.description.substr(0, 24), p.port,
          p.info.lid, p.info.lmc, vls_text(p.info.vl_cap), vls_text(p.info.oper_vls),
          p.info.vl_high_limit, fmt::format("{}/{}", p.info.vlarb_high_cap, p.info.vlarb_low_cap)));
    }
  }
  return out;
}

}  // namespace rdmaqos::fabric
