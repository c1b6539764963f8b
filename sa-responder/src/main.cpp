// rdma-qos-sad: the policy-enforcing SA responder. This first cut discovers the fabric and
// dumps the model (--dump-fabric), which the ibsim tests compare with the topology they built.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "rdma-qos/sa-responder/discovery.h"

namespace {

using rdmaqos::sad::Discovery;
using rdmaqos::sad::Endpoint;

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
                       {"pkeys", pm.pkeys},
                       {"sl2vl", sl2vl},
                       {"peer_node", pm.peer_node},
                       {"peer_port", pm.peer_port}});
    }
    nodes.push_back({{"guid", fmt::format("{:#018x}", n.guid)},
                     {"type", static_cast<int>(n.type)},
                     {"description", n.description},
                     {"ports", ports},
                     {"lft_size", n.lft.size()}});
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
          {"warnings", d.warnings}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdma-qos-sad: a policy-enforcing SA PathRecord responder"};
  rdmaqos::sad::DiscoveryOptions discovery;
  bool dump_fabric = false;
  bool json = false;
  app.add_option("--ca", discovery.ca, "CA to run at (default: the first)");
  app.add_option("--port", discovery.port, "port of the CA (default: the first active)");
  app.add_flag("--dump-fabric", dump_fabric, "discover the fabric, print the model and exit");
  app.add_flag("--json", json, "print JSON");
  CLI11_PARSE(app, argc, argv);

  if (!dump_fabric) {
    std::cerr << "rdma-qos-sad: only --dump-fabric is implemented so far\n";
    return 2;
  }
  auto result = rdmaqos::sad::discover_fabric(discovery);
  if (!result) {
    std::cerr << "rdma-qos-sad: discovery failed: " << result.error().message << "\n";
    return 1;
  }
  nlohmann::json j = fabric_json(*result);
  std::cout << (json ? j.dump() : j.dump(2)) << "\n";
  return 0;
}
