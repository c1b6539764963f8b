// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A routing engine that programs its own SL2VL tables keeps them with the plugin loaded: the
// policy's qos-setup scopes would map the engine's SLs (its deadlock-free classes) onto VLs the
// engine did not choose, so the plugin leaves those tables to the engine.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/torus_2qos_conf.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;
using testing::kAnswering;
using testing::plugin_fabric_options;
using testing::wait_for_log;

// A CA's SL2VL table as smpquery prints it: the VLs of SLs 0..15 (empty if none printed).
std::vector<int> ca_sl2vl(const IbFabric& f, const std::string& ca) {
  auto r = f.run_at("node001", {"smpquery", "sl2vl", f.lid_arg(ca)});
  // "ports: in  0, out  0: | 0| 0| ... | 1|"
  const auto at = r.output.find("out  0:");
  std::vector<int> vls;
  if (at == std::string::npos) return vls;
  std::istringstream in(r.output.substr(at + 7, r.output.find('\n', at) - at - 7));
  for (std::string cell; std::getline(in, cell, '|');)
    if (cell.find_first_of("0123456789") != std::string::npos) vls.push_back(std::stoi(cell));
  return vls;
}

// The qos-setup scope maps the CAs' SLs 0..15 to VLs 1,0,3,2,...; torus-2QoS gives an endport
// VL 0 for its lower QoS class (SLs 0-7) and VL 1 for its upper one (SLs 8-15), and that stays.
TEST(EngineTables, TorusTwoQosKeepsItsSl2VlTablesOverTheQosSetupScopes) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.topology = testbed::make_switch_graph(testbed::torus_spec(3, 3));
  o.files["torus-2QoS.conf"] = testbed::torus_2qos_conf(o.topology, {3, 3, 1});
  o.opensm_conf += "routing_engine torus-2QoS\ntorus_config @DIR@/torus-2QoS.conf\n";
  o.files["plugin-policy.conf"] =
      "port-groups\n  port-group\n    name: Hosts\n    node-type: CA\n  end-port-group\n"
      "end-port-groups\nqos-setup\n  sl2vl-tables\n    sl2vl-scope\n      group: Hosts\n"
      "      sl2vl-table: 1,0,3,2,1,0,3,2,1,0,3,2,1,0,3,2\n    end-sl2vl-scope\n"
      "  end-sl2vl-tables\nend-qos-setup\n"
      "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\nend-qos-levels\n";
  IbFabric f(o);
  // Answering: the sweep that routed and programmed the tables is over.
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  ASSERT_TRUE(wait_for_log(f, "torus-2QoS tables configured")) << f.opensm_log();
  const std::vector<int> torus = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  for (const char* ca : {"node002", "node005", "node009"}) EXPECT_EQ(ca_sl2vl(f, ca), torus) << ca;
}

}  // namespace
}  // namespace rdmaqos::osmp
