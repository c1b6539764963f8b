// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model to and from JSON (see discovery_json.h).
#include "rdma-qos/sa-responder/discovery_json.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace rdmaqos::sad {

nlohmann::json fabric_json(const Discovery& d) {
  const auto& m = d.model;
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : m.nodes) {
    nlohmann::json ports = nlohmann::json::array();
    for (size_t p = 0; p < n.ports.size(); ++p) {
      const auto& pm = n.ports[p];
      if (!pm.present) continue;
      nlohmann::json sl2vl = nlohmann::json::array();
      for (const auto& t : pm.sl2vl) sl2vl.push_back(t);
      ports.push_back({{"port", p},
                       {"guid", fmt::format("{:#018x}", pm.guid)},
                       {"lid", pm.lid},
                       {"lmc", pm.lmc},
                       {"mtu_cap", pm.mtu_cap},
                       {"rate", pm.rate},
                       {"capability_mask", pm.capability_mask},
                       {"capability_mask2", pm.capability_mask2},
                       {"pkeys", pm.pkeys},
                       {"sl2vl", sl2vl},
                       {"peer_node", pm.peer_node},
                       {"peer_port", pm.peer_port}});
    }
    nodes.push_back({{"guid", fmt::format("{:#018x}", n.guid)},
                     {"type", static_cast<int>(n.type)},
                     {"description", n.description},
                     {"ports", ports},
                     {"lft_size", n.lft.size()},
                     {"lft", n.lft}});
  }
  // Paths from the port discovery ran at to every endpoint: what the SA will answer from.
  nlohmann::json paths = nlohmann::json::array();
  for (const Endpoint& e : m.endpoints()) {
    uint16_t dlid = m.port(e).lid;
    auto w = m.walk(d.self, dlid);
    if (!w) {
      paths.push_back({{"dlid", dlid}, {"reachable", false}});
      continue;
    }
    paths.push_back({{"dlid", dlid},
                     {"reachable", true},
                     {"mtu", w->mtu},
                     {"rate", w->rate},
                     {"hops", w->hops},
                     {"valid_sls", w->valid_sls}});
  }
  return {{"subnet_prefix", fmt::format("{:#018x}", m.subnet_prefix)},
          {"subnet_timeout", m.subnet_timeout},
          {"self", {{"node", d.self.node}, {"port", d.self.port}}},
          {"nodes", nodes},
          {"paths", paths},
          {"missing", d.missing},
          {"warnings", d.warnings}};
}

// The model back from --dump-fabric --json.
std::optional<Discovery> discovery_from_json(const nlohmann::json& j) {
  try {
    Discovery d;
    auto hex = [](const nlohmann::json& v) {
      return std::stoull(v.get<std::string>(), nullptr, 16);
    };
    d.model.subnet_prefix = hex(j.at("subnet_prefix"));
    // A discovery that missed tables says so: the daemon must not install its model.
    d.missing = j.at("missing").get<std::vector<std::string>>();
    d.warnings = j.value("warnings", std::vector<std::string>{});
    d.self.node = j.at("self").at("node").get<int>();
    d.self.port = j.at("self").at("port").get<uint8_t>();
    for (const auto& jn : j.at("nodes")) {
      NodeModel n;
      n.guid = hex(jn.at("guid"));
      n.type = static_cast<rdmaqos::policy::NodeType>(jn.at("type").get<int>());
      n.description = jn.at("description").get<std::string>();
      n.lft = jn.at("lft").get<std::vector<uint8_t>>();
      for (const auto& jp : jn.at("ports")) {
        size_t num = jp.at("port").get<size_t>();
        if (num > 255) return std::nullopt;
        if (n.ports.size() <= num) n.ports.resize(num + 1);
        PortModel& p = n.ports[num];
        p.present = true;
        p.guid = hex(jp.at("guid"));
        p.lid = jp.at("lid").get<uint16_t>();
        p.lmc = jp.at("lmc").get<uint8_t>();
        p.mtu_cap = jp.at("mtu_cap").get<uint8_t>();
        p.rate = jp.at("rate").get<uint8_t>();
        p.capability_mask = jp.value("capability_mask", p.capability_mask);
        p.capability_mask2 = jp.value("capability_mask2", p.capability_mask2);
        p.pkeys = jp.at("pkeys").get<std::vector<uint16_t>>();
        p.sl2vl = jp.at("sl2vl").get<std::vector<Sl2Vl>>();
        p.peer_node = jp.at("peer_node").get<int>();
        p.peer_port = jp.at("peer_port").get<uint8_t>();
      }
      d.model.nodes.push_back(std::move(n));
    }
    for (const auto& n : d.model.nodes)
      for (const auto& p : n.ports)
        if (p.peer_node >= static_cast<int>(d.model.nodes.size())) return std::nullopt;
    if (d.self.node < 0 || d.self.node >= static_cast<int>(d.model.nodes.size()) ||
        d.self.port >= d.model.nodes[static_cast<size_t>(d.self.node)].ports.size()) {
      return std::nullopt;
    }
    d.model.sm_port_guid = d.model.port(d.self).guid;
    d.model.index();
    return d;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace rdmaqos::sad
