// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos fabric check` and `fabric apply` on ibsim after OpenSM programmed the fabric: the
// check agrees with OpenSM's own programming, finds a table changed behind its back, and apply
// writes the policy's qos-setup tables and reads them back. The commands run at sm01 (umad2sim
// is an LD_PRELOAD interposer). Expected tables are written out from the policy text below.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "tenant_fabric.h"

namespace rdmaqos::fabric {
namespace {

using nlohmann::json;
using testbed::IbFabric;

// The JSON document of the command's output: from the first line that opens an object (the
// diagnostics and progress lines on stderr come before it).
json report_of(const std::string& output) {
  const size_t at =
      output.rfind("\n{\n") != std::string::npos ? output.rfind("\n{\n") + 1 : output.find('{');
  if (at == std::string::npos) {
    ADD_FAILURE() << "no JSON in:\n" << output;
    return json::object();
  }
  return json::parse(output.substr(at), nullptr, false);
}

// A policy whose qos-setup gives node002's port (by port GUID) its own tables, and the links
// into it (across) the same VL arbitration.
std::string node002_policy(uint64_t guid) {
  return fmt::format(R"(port-groups
  port-group
    name: Storage
    port-guid: {:#x}
  end-port-group
end-port-groups
qos-setup
  vlarb-tables
    vlarb-scope
      group: Storage
      across: Storage
      vlarb-high: 0:255,1:127
      vlarb-low: 2:63,3:31
    end-vlarb-scope
  end-vlarb-tables
  sl2vl-tables
    sl2vl-scope
      group: Storage
      sl2vl-table: 1,0,3,2,4,0,0,0,0,0,0,0,0,0,0,15
    end-sl2vl-scope
    sl2vl-scope
      across-to: Storage
      sl2vl-table: 1,0,3,2,4,0,0,0,0,0,0,0,0,0,0,15
    end-sl2vl-scope
  end-sl2vl-tables
end-qos-setup
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: Scratch
    sl: 15
  end-qos-level
  qos-level
    name: Unweighted
    sl: 4
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    destination: Storage
    qos-level-name: Scratch
  end-qos-match-rule
  qos-match-rule
    source: Storage
    qos-level-name: Unweighted
  end-qos-match-rule
end-qos-match-rules
)",
                     guid);
}

class FabricCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testbed::FatTreeSpec spec;
    spec.cas = 4;
    fabric_ = std::make_unique<IbFabric>(testbed::fabric_options(testbed::make_fat_tree(spec)));
    policy_path_ = fabric_->dir() + "/qos-policy.conf";
    std::ofstream(policy_path_) << node002_policy(fabric_->port_guid("node002"));
  }

  testbed::RunResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {RDMA_QOS_CLI, "fabric"});
    return fabric_->run_at(fabric_->topology().sm_node().id, args, std::chrono::seconds(120));
  }

  // The findings of one kind, as "node port table" strings.
  static std::set<std::string> findings(const json& report, const std::string& kind) {
    std::set<std::string> out;
    for (const json& f : report["findings"]) {
      if (f["kind"] != kind) continue;
      out.insert(fmt::format("{} {} {}", f["port"]["node"].get<std::string>(),
                             f["port"]["port"].get<int>(), f.value("table", "")));
    }
    return out;
  }

  std::unique_ptr<IbFabric> fabric_;
  std::string policy_path_;
};

TEST_F(FabricCheckTest, AgreesWithTheTablesOpenSmProgrammed) {
  auto r = run({"check", "--json", "-q", "--ports"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = report_of(r.output);
  EXPECT_EQ(report["status"], "clean");
  // --ports: what each port reported, e.g. node001's LID as the topology fixed it.
  bool node001 = false;
  for (const json& p : report["port_info"]) {
    if (p["node"] != "node001 HCA-1") continue;
    node001 = true;
    EXPECT_EQ(p["lid"], fabric_->lid("node001"));
    EXPECT_EQ(p["lmc"], 0);
    EXPECT_EQ(p["vl_cap"], "VL0-7");  // ibsim's ports
  }
  EXPECT_TRUE(node001) << r.output;
  // 4 CAs + the SM's CA, 2 leaves and 2 spines: every active port's SL2VL and VLArb tables.
  EXPECT_GT(report["ports"].get<int>(), 10);
  EXPECT_GT(report["tables"].get<int>(), report["ports"].get<int>() * 3);
}

// Under an engine whose SLs are its deadlock-free layers (LASH here) the policy's qos-setup is
// not applied, by the OpenSM plugin or by `fabric apply`: check compares with OpenSM's own
// tables, says why on stderr, and finds the tables OpenSM programmed clean; apply writes none.
TEST_F(FabricCheckTest, UnderAnEngineThatAssignsSlsTheQosSetupIsNotApplied) {
  const std::string conf = fabric_->dir() + "/lash.conf";
  std::ofstream(conf) << "routing_engine lash,minhop\n";
  auto r = run({"check", "--json", "-q", "--policy", policy_path_, "--opensm-conf", conf});
  EXPECT_NE(r.output.find("opensm.conf routes with lash, which assigns path SLs"),
            std::string::npos)
      << r.output;
  const json report = report_of(r.output);
  EXPECT_TRUE(findings(report, "difference").empty()) << r.output;
  auto a = run({"apply", "--json", "-q", "--policy", policy_path_, "--opensm-conf", conf});
  EXPECT_TRUE(findings(report_of(a.output), "difference").empty()) << a.output;
  auto after = run({"check", "--json", "-q"});
  EXPECT_TRUE(findings(report_of(after.output), "difference").empty()) << after.output;
}

TEST_F(FabricCheckTest, FindsATableChangedBehindItsBack) {
  // apply writes node002's tables and the leaf port's tables towards it; the check without the
  // policy (OpenSM's tables intended) must name exactly those.
  auto a = run({"apply", "--json", "-q", "--policy", policy_path_});
  ASSERT_TRUE(findings(report_of(a.output), "difference").empty()) << a.output;
  auto r = run({"check", "--json", "-q"});
  ASSERT_EQ(r.exit_code, 1) << r.output;
  const json report = report_of(r.output);
  EXPECT_EQ(report["status"], "differences");
  const auto diffs = findings(report, "difference");
  EXPECT_TRUE(diffs.contains("node002 HCA-1 1 sl2vl 0->1")) << r.output;
  EXPECT_TRUE(diffs.contains("node002 HCA-1 1 vlarb-high")) << r.output;
  EXPECT_TRUE(diffs.contains("node002 HCA-1 1 vlarb-low")) << r.output;
  for (const auto& d : diffs) {
    EXPECT_TRUE(d.starts_with("node002 ") || d.starts_with("leaf01 ")) << d;
  }
  for (const json& f : report["findings"]) {
    if (f["kind"] == "difference" && f["port"]["node"] == "node002 HCA-1" &&
        f["table"] == "sl2vl 0->1") {
      EXPECT_EQ(f["intended"], "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7");
      EXPECT_EQ(f["actual"], "1,0,3,2,4,0,0,0,0,0,0,0,0,0,0,15");
    }
  }
}

TEST_F(FabricCheckTest, ApplyWritesThePolicyTablesAndReadsThemBack) {
  auto before = run({"check", "--json", "-q", "--policy", policy_path_});
  ASSERT_EQ(before.exit_code, 1) << before.output;
  auto a = run({"apply", "--json", "-q", "--policy", policy_path_});
  ASSERT_EQ(a.exit_code, 1) << a.output;  // the levels below still find problems
  const json report = report_of(a.output);
  EXPECT_TRUE(findings(report, "difference").empty()) << a.output;
  // Level Scratch (SL 15) is dropped at node002 and on the leaf port towards it; level
  // Unweighted (SL 4) goes to VL 4, which the policy's arbitration gives no weight.
  EXPECT_EQ(findings(report, "level-dropped").size(), 1u) << a.output;
  EXPECT_EQ(findings(report, "level-no-weight").size(), 1u) << a.output;
  for (const json& f : report["findings"]) {
    if (f["kind"] == "level-dropped") {
      EXPECT_NE(f["message"].get<std::string>().find("level Scratch (SL 15)"), std::string::npos);
      EXPECT_EQ(f["ports"].size(), 2u) << f.dump();
    }
  }
}

// Why the plugin exists: OpenSM never reads SL2VL/VLArb tables back; it sends a table when its
// cached copy of what it sent differs from its configuration, or when it must program a port
// again (its link came up, a restart). So a one-shot apply beside a plain OpenSM stays through
// its heavy sweeps, but a port whose link bounces gets OpenSM's tables back.
TEST(FabricApplyBesideOpenSm, SurvivesHeavySweepsButNotALinkThatBounces) {
  testbed::FatTreeSpec spec;
  spec.cas = 4;
  auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.ibsim_console = true;
  o.opensm_conf = "force_log_flush TRUE\n";  // the test counts sweeps in OpenSM's log
  IbFabric f(o);
  const std::string policy = f.dir() + "/qos-policy.conf";
  std::ofstream(policy) << node002_policy(f.port_guid("node002"));
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {RDMA_QOS_CLI, "fabric"});
    return f.run_at(f.topology().sm_node().id, args, std::chrono::seconds(120));
  };
  auto differences = [&] {
    auto r = run({"check", "--json", "-q", "--policy", policy});
    std::set<std::string> out;
    const json report = report_of(r.output);  // kept: the loop walks into it
    for (const json& x : report["findings"])
      if (x["kind"] == "difference") out.insert(x["port"]["node"].get<std::string>());
    return out;
  };
  ASSERT_TRUE(run({"apply", "-q", "--policy", policy}).exit_code <= 1);
  ASSERT_TRUE(differences().empty());
  const auto log_sweeps = [&] {
    const std::string log = f.opensm_log();
    size_t n = 0;
    for (size_t at = log.find("SUBNET UP"); at != std::string::npos;
         at = log.find("SUBNET UP", at + 1))
      ++n;
    return n;
  };
  auto wait_sweep = [&](size_t before) {
    for (int i = 0; i < 120 && log_sweeps() <= before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return log_sweeps() > before;
  };
  size_t before = log_sweeps();
  ::kill(f.pids().at(1), SIGHUP);
  ASSERT_TRUE(wait_sweep(before)) << f.opensm_log();
  EXPECT_TRUE(differences().empty());

  before = log_sweeps();
  f.ibsim_command("Unlink \"node002\"");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  f.ibsim_command("ReLink \"node002\"");
  ::kill(f.pids().at(1), SIGHUP);
  ASSERT_TRUE(wait_sweep(before)) << f.opensm_log();
  std::set<std::string> after;
  for (int i = 0; i < 60 && !after.contains("node002 HCA-1"); ++i) {
    after = differences();
    if (!after.contains("node002 HCA-1")) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_TRUE(after.contains("node002 HCA-1"));
}

TEST_F(FabricCheckTest, ShareShowsEachSlsShareFromTheTablesReadAndDrawsIt) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  }
  const std::string svg = fabric_->dir() + "/shares.svg";
  auto r = run({"share", "--json", "-q", "--svg", svg});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json view = report_of(r.output);
  ASSERT_EQ(view["classes"].size(), 2u) << r.output;  // CA ports and switch external ports
  // OpenSM's defaults on 8-VL ports: VL 0 alone in the high table, SLs 0 and 8 on it.
  const json& ca = view["classes"][0];
  EXPECT_EQ(ca["class"], "ca");
  EXPECT_EQ(ca["sls"][0]["vl"], 0);
  EXPECT_EQ(ca["sls"][8]["vl"], 0);
  EXPECT_DOUBLE_EQ(ca["sls"][0]["share"].get<double>(), ca["sls"][8]["share"].get<double>());
  std::ifstream in(svg);
  std::string head;
  std::getline(in, head);
  EXPECT_NE(head.find("<?xml"), std::string::npos) << "no SVG from gnuplot";
}

// OpenSM programs each port class from its own qos_<class>_* options: the check, given the same
// opensm.conf, computes the same tables per class; without it, it names the classes that moved.
TEST(FabricCheckOpenSmConf, EachPortClassGetsItsOwnOpenSmConfTables) {
  testbed::FatTreeSpec spec;
  spec.cas = 4;
  auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.opensm_conf =
      "qos TRUE\n"
      "qos_ca_sl2vl 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n"
      "qos_ca_vlarb_low 0:8,1:32\n"
      "qos_swe_sl2vl 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2\n"
      "qos_swe_vlarb_high 2:16\n";
  IbFabric f(o);
  const std::string conf = f.dir() + "/check-opensm.conf";
  std::ofstream(conf) << o.opensm_conf;
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {RDMA_QOS_CLI, "fabric", "check", "--json", "-q"});
    return f.run_at(f.topology().sm_node().id, args, std::chrono::seconds(120));
  };
  auto same = run({"--opensm-conf", conf});
  EXPECT_EQ(same.exit_code, 0) << same.output;
  auto defaults = run({});
  ASSERT_EQ(defaults.exit_code, 1) << defaults.output;
  bool ca_sl2vl = false, swe_sl2vl = false;
  const json report = report_of(defaults.output);
  ASSERT_TRUE(report.contains("findings")) << report.dump();
  for (const json& x : report["findings"]) {
    if (x["kind"] != "difference") continue;
    const std::string node = x["port"]["node"];
    if (node.starts_with("node") && x["table"] == "sl2vl 0->1") {
      ca_sl2vl = true;
      EXPECT_EQ(x["actual"], "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1");
    }
    if (node.starts_with("leaf") && x["table"].get<std::string>().starts_with("sl2vl")) {
      swe_sl2vl = true;
      EXPECT_EQ(x["actual"], "2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2");
    }
  }
  EXPECT_TRUE(ca_sl2vl) << defaults.output;
  EXPECT_TRUE(swe_sl2vl) << defaults.output;
}

// A pkey port group selects the ports whose P_Key table holds its P_Key, full or limited
// member, as OpenSM's partitions file put it there: node001 (full) and node003 (limited) of
// partition 0x20 get the scope's tables, nobody else, and apply gives them those. A group of
// the partition's name is the same group once --partitions names its P_Key, and selects no
// port without.
TEST(FabricCheckPKeyGroup, SelectsThePartitionsMembersByTheirPKeyTables) {
  testbed::FatTreeSpec spec;
  spec.cas = 4;
  auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.partitions =
      tenant_partitions(o.topology.node("node001").port_guid, o.topology.node("node003").port_guid);
  IbFabric f(o);
  const std::string policy = f.dir() + "/qos-policy.conf";
  std::ofstream(policy) << kTenantPolicy;
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {RDMA_QOS_CLI, "fabric"});
    return f.run_at(f.topology().sm_node().id, args, std::chrono::seconds(120));
  };
  const std::string by_name = f.dir() + "/qos-policy-by-name.conf";
  std::ofstream(by_name) << tenant_partition_policy();
  const std::string partitions = f.dir() + "/partitions.conf";  // the file OpenSM was given
  // The differences a check finds, and whether the intended SL2VL tables are the scope's.
  auto differences = [&](std::vector<std::string> args) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    std::set<std::string> diffs;
    const json report = report_of(r.output);  // kept: the loop walks into it
    for (const json& x : report["findings"]) {
      if (x["kind"] != "difference") continue;
      diffs.insert(fmt::format("{} {} {}", x["port"]["node"].get<std::string>(),
                               x["port"]["port"].get<int>(), x["table"].get<std::string>()));
      if (x["table"] == "sl2vl 0->1") {
        EXPECT_EQ(x["intended"], kTenantSl2Vl);
      }
    }
    return std::make_pair(diffs, r.output);
  };
  auto [diffs, output] = differences({"check", "--json", "-q", "--policy", policy});
  EXPECT_EQ(diffs, tenant_differences()) << output;
  std::tie(diffs, output) =
      differences({"check", "--json", "-q", "--policy", by_name, "--partitions", partitions});
  EXPECT_EQ(diffs, tenant_differences()) << output;
  auto unnamed = run({"check", "--json", "-q", "--policy", by_name});
  EXPECT_EQ(unnamed.exit_code, 0) << unnamed.output;
  EXPECT_NE(unnamed.output.find("--partitions"), std::string::npos) << unnamed.output;

  auto a = run({"apply", "--json", "-q", "--policy", policy});
  EXPECT_EQ(a.exit_code, 0) << a.output;
}

TEST(FabricCheckNoFabric, ExitsTwoWhenNothingCanBeRead) {
  testbed::ProcessOptions o;
  o.argv = {RDMA_QOS_CLI, "fabric", "check", "-q", "--ca", "no-such-ca"};
  auto r = testbed::run(o, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace rdmaqos::fabric
