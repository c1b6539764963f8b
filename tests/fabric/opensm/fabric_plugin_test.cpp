// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The policy's qos-setup applied inside OpenSM by the rdma-qos plugin: OpenSM's own sweep writes
// the policy's tables (the plugin's update_sl2vl / update_vlarb callbacks), and they stay through
// heavy sweeps forced by SIGHUP and by a CA unlinked and relinked in ibsim. `rdma-qos fabric
// check` reads every table back after each. A mid-size fat tree in CI (32 CAs); the soak run
// sets RDMA_QOS_FABRIC_CAS to a large one.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "tenant_fabric.h"

namespace rdmaqos::fabric {
namespace {

using nlohmann::json;
using testbed::IbFabric;

constexpr const char* kPolicy = R"(port-groups
  port-group
    name: Hosts
    node-type: CA
  end-port-group
end-port-groups
qos-setup
  vlarb-tables
    vlarb-scope
      group: Hosts
      across: Hosts
      vlarb-high: 0:255,1:127
      vlarb-low: 2:63,3:31
    end-vlarb-scope
  end-vlarb-tables
  sl2vl-tables
    sl2vl-scope
      group: Hosts
      sl2vl-table: 1,0,3,2,1,0,3,2,1,0,3,2,1,0,3,2
    end-sl2vl-scope
    sl2vl-scope
      across-to: Hosts
      sl2vl-table: 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3
    end-sl2vl-scope
  end-sl2vl-tables
end-qos-setup
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
end-qos-levels
)";

bool eventually(const std::function<bool()>& want, std::chrono::seconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  while (std::chrono::steady_clock::now() < deadline) {
    if (want()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return false;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class FabricPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testbed::FatTreeSpec spec;
    const char* cas = std::getenv("RDMA_QOS_FABRIC_CAS");
    spec.cas = cas != nullptr ? std::atoi(cas) : 32;
    spec.cas_per_leaf = spec.cas > 64 ? 32 : 8;
    spec.spines = spec.cas > 64 ? 4 : 2;
    auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
    o.files["qos-policy.conf"] = kPolicy;
    o.opensm_conf =
        "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\nevent_plugin_options "
        "control-socket=none policy=@DIR@/qos-policy.conf\n";
    o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
    o.ibsim_console = true;
    o.start_timeout = std::chrono::seconds(600);
    fabric_ = std::make_unique<IbFabric>(o);
  }

  // The check's JSON report, with the policy, read at sm01.
  json check() {
    auto r = fabric_->run_at(fabric_->topology().sm_node().id,
                             {RDMA_QOS_CLI, "fabric", "check", "--json", "-q", "--policy",
                              fabric_->dir() + "/qos-policy.conf"},
                             std::chrono::seconds(900));
    last_output_ = r.output;
    const size_t at = r.output.find("{\n");
    if (at == std::string::npos) return json::object();
    return json::parse(r.output.substr(at), nullptr, false);
  }

  bool clean() {
    const json j = check();
    return j.is_object() && j.value("status", "") == "clean" && j.value("tables", 0) > 0;
  }

  std::unique_ptr<IbFabric> fabric_;
  std::string last_output_;
};

TEST_F(FabricPluginTest, OpenSmsSweepsKeepThePolicysTables) {
  ASSERT_TRUE(eventually([&] { return clean(); }, std::chrono::seconds(60)))
      << last_output_ << fabric_->opensm_log();
  EXPECT_NE(fabric_->opensm_log().find("qos-setup: 2 sl2vl and 1 vlarb scope(s)"),
            std::string::npos)
      << fabric_->opensm_log();
  const json first = check();
  // Every CA port and every leaf port towards a CA holds the policy's tables, not OpenSM's.
  EXPECT_GT(first["tables"].get<int>(), 40);

  const pid_t opensm = fabric_->pids().at(1);
  for (int round = 0; round < 3; ++round) {
    const size_t sweeps = count(fabric_->opensm_log(), "SUBNET UP");
    if (round % 2 == 0) {
      ::kill(opensm, SIGHUP);  // OpenSM re-reads its configuration and sweeps heavily
    } else {
      fabric_->ibsim_command("Unlink \"node003\"");
      std::this_thread::sleep_for(std::chrono::seconds(2));
      fabric_->ibsim_command("ReLink \"node003\"");
      ::kill(opensm, SIGHUP);
    }
    ASSERT_TRUE(eventually([&] { return count(fabric_->opensm_log(), "SUBNET UP") > sweeps; },
                           std::chrono::seconds(60)))
        << "round " << round << ": no heavy sweep\n"
        << fabric_->opensm_log();
    // Read back several times: a table OpenSM rewrote would show between sweeps.
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(eventually([&] { return clean(); }, std::chrono::seconds(30)))
          << "round " << round << " read " << i << ":\n"
          << last_output_;
    }
  }
  EXPECT_EQ(fabric_->opensm_log().find("programs SL2VL/VLArb itself"), std::string::npos);
}

// Inside OpenSM, a pkey group is the ports whose P_Key table (as OpenSM set it from its
// partitions file) holds the P_Key: the plugin gives node001 (full member) and node003 (limited)
// the policy's tables and leaves every other port OpenSM's.
void expect_the_group_gets_its_tables(const std::string& policy) {
  testbed::FatTreeSpec spec;
  spec.cas = 4;
  auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.partitions =
      tenant_partitions(o.topology.node("node001").port_guid, o.topology.node("node003").port_guid);
  o.files["qos-policy.conf"] = policy;
  o.opensm_conf =
      "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\nevent_plugin_options "
      "control-socket=none policy=@DIR@/qos-policy.conf\n";
  o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
  IbFabric f(o);
  std::string output;
  // The differences a check finds, with or without the policy.
  auto differences = [&](bool with_policy) {
    std::vector<std::string> args = {RDMA_QOS_CLI, "fabric", "check", "--json", "-q"};
    if (with_policy)
      args.insert(args.end(), {"--policy", f.dir() + "/qos-policy.conf", "--partitions",
                               f.dir() + "/partitions.conf"});
    auto r = f.run_at(f.topology().sm_node().id, args, std::chrono::seconds(120));
    output = r.output;
    std::set<std::string> out;
    const size_t at = r.output.find("{\n");
    if (at == std::string::npos) return std::set<std::string>{"no report"};
    const json report = json::parse(r.output.substr(at), nullptr, false);
    if (!report.is_object() || !report.contains("findings")) return std::set<std::string>{"?"};
    for (const json& x : report["findings"]) {
      if (x["kind"] != "difference") continue;
      out.insert(fmt::format("{} {} {}", x["port"]["node"].get<std::string>(),
                             x["port"]["port"].get<int>(), x["table"].get<std::string>()));
    }
    return out;
  };
  EXPECT_TRUE(eventually([&] { return differences(true).empty(); }, std::chrono::seconds(60)))
      << output << f.opensm_log();
  EXPECT_EQ(differences(false), tenant_differences()) << output;
}

TEST(FabricPluginPKeyGroup, OpenSmWritesTheGroupsTablesOnItsMembersOnly) {
  expect_the_group_gets_its_tables(kTenantPolicy);
}

// A group of the partition's name is the same group: the plugin finds its P_Key in OpenSM's
// own partitions, no file needed (the check is told the partitions file).
TEST(FabricPluginPKeyGroup, PartitionNamesResolveThroughOpenSmsPartitions) {
  expect_the_group_gets_its_tables(tenant_partition_policy());
}

}  // namespace
}  // namespace rdmaqos::fabric
