// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric discovery against ibsim after OpenSM configured it: `rdma-qos-sad --dump-fabric --json`
// runs at sm01 (umad2sim is an LD_PRELOAD interposer, so discovery runs in its own process) and
// its model is compared with the topology the test built (GUIDs, LIDs and link rates fixed by
// make_fat_tree).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::sad {
namespace {

using nlohmann::json;
using testbed::IbFabric;
using testbed::TopoNode;

uint64_t hex(const json& j) {
  return std::stoull(j.get<std::string>(), nullptr, 16);
}

// The JSON line of the tool's output (umad2sim may add lines of its own).
json dump_line(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '{') return json::parse(line);
  }
  ADD_FAILURE() << "no JSON in:\n" << output;
  return json::object();
}

class DiscoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = new IbFabric(testbed::fabric_options(testbed::make_fat_tree({})));
    auto r = fabric_->run_at(fabric_->topology().sm_node().id,
                             {RDMA_QOS_SAD, "--dump-fabric", "--json"}, std::chrono::seconds(60));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    output_ = new std::string(r.output);
    dump_ = new json(dump_line(r.output));
  }
  static void TearDownTestSuite() {
    delete dump_;
    delete output_;
    delete fabric_;
    dump_ = nullptr;
    fabric_ = nullptr;
  }

  // The dumped node with this node GUID.
  static const json* node(uint64_t guid) {
    for (const json& n : (*dump_)["nodes"])
      if (hex(n["guid"]) == guid) return &n;
    return nullptr;
  }

  static IbFabric* fabric_;
  static json* dump_;
  static std::string* output_;
};

IbFabric* DiscoveryTest::fabric_ = nullptr;
json* DiscoveryTest::dump_ = nullptr;
std::string* DiscoveryTest::output_ = nullptr;

TEST_F(DiscoveryTest, FindsEveryNodeOfTheTopology) {
  ASSERT_TRUE(dump_->contains("nodes"));
  EXPECT_EQ((*dump_)["nodes"].size(), fabric_->topology().nodes.size());
  for (const TopoNode& t : fabric_->topology().nodes) {
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    EXPECT_EQ((*n)["type"], t.kind == testbed::NodeKind::kSwitch ? 2 : 1) << t.id;
  }
}

TEST_F(DiscoveryTest, LidsAndPortGuidsAreTheAssignedOnes) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    int wanted_port = t.kind == testbed::NodeKind::kSwitch ? 0 : 1;
    bool found = false;
    for (const json& p : (*n)["ports"]) {
      if (p["port"] != wanted_port) continue;
      found = true;
      EXPECT_EQ(p["lid"], t.lid) << t.id;
      EXPECT_EQ(hex(p["guid"]), t.port_guid) << t.id;
    }
    EXPECT_TRUE(found) << t.id;
  }
}

TEST_F(DiscoveryTest, CaPortRatesFollowTheLinkOptions) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    if (t.kind != testbed::NodeKind::kCa) continue;
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    for (const json& p : (*n)["ports"])
      if (p["port"] == 1) {
        EXPECT_EQ(p["rate"], testbed::link_rate_code(t.link)) << t.id;
      }
  }
}

// Progress comes before the model: the size of the topology, then the end (the daemon logs
// these lines, and its re-discovery time limit counts from the last one).
TEST_F(DiscoveryTest, ReportsProgressBeforeTheModel) {
  const std::string& out = *output_;
  auto topology = out.find("discovery: topology: 13 nodes (4 switches)");
  auto done = out.find("discovery: done: 13 endpoints, 0 table(s) missing, 0 SMP(s) sent again");
  auto model = out.find("\n{");
  ASSERT_NE(topology, std::string::npos) << out.substr(0, 2000);
  ASSERT_NE(done, std::string::npos) << out.substr(0, 2000);
  EXPECT_LT(topology, done);
  EXPECT_LT(done, model);
}

TEST_F(DiscoveryTest, CaPortsHoldTheDefaultPartitionAsFullMembers) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    if (t.kind != testbed::NodeKind::kCa) continue;
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr);
    for (const json& p : (*n)["ports"])
      if (p["port"] == 1) {
        EXPECT_EQ(p["pkeys"], json::array({0xFFFF})) << t.id;
      }
  }
}

TEST_F(DiscoveryTest, EveryEndpointIsReachableFromTheSmPort) {
  // The rate of a path from sm01 (4x QDR, uplinks 4x QDR) to a CA is that CA's link rate
  // whenever the CA's link is the slowest; to a switch it is port 0's 4x SDR (10G).
  std::map<uint16_t, const TopoNode*> by_lid;
  for (const TopoNode& t : fabric_->topology().nodes) by_lid[t.lid] = &t;
  ASSERT_EQ((*dump_)["paths"].size(), fabric_->topology().nodes.size());
  for (const json& path : (*dump_)["paths"]) {
    uint16_t dlid = path["dlid"];
    ASSERT_TRUE(by_lid.count(dlid)) << dlid;
    const TopoNode& t = *by_lid[dlid];
    EXPECT_TRUE(path["reachable"].get<bool>()) << t.id;
    if (!path["reachable"].get<bool>()) continue;
    if (t.kind == testbed::NodeKind::kSwitch) {
      EXPECT_EQ(path["rate"], 3) << t.id;
      EXPECT_EQ(path["mtu"], 3) << t.id;  // ibsim: switch port 0 MTUCap 1024
    } else {
      EXPECT_EQ(path["mtu"], 4) << t.id;  // ibsim: 2048 on CA and switch external ports
      int link = testbed::link_rate_code(t.link);
      // Links faster than 40G (12x DDR, 60G) are capped by the 40G uplinks: 40G (code 7).
      int expected = testbed::link_gbps(t.link) > 40 ? 7 : link;
      EXPECT_EQ(path["rate"], expected) << t.id;
    }
  }
}

TEST_F(DiscoveryTest, OpenSmWithQosMapsNoDataSlToVl15) {
  for (const json& path : (*dump_)["paths"]) {
    if (!path["reachable"].get<bool>()) continue;
    // OpenSM's default SL2VL with QoS maps SL 15 to VL 15 on some ports at most; SL 0 always
    // reaches a data VL.
    EXPECT_TRUE(path["valid_sls"].get<int>() & 1) << path.dump();
  }
  EXPECT_TRUE((*dump_)["missing"].empty()) << (*dump_)["missing"].dump();
}

}  // namespace
}  // namespace rdmaqos::sad
