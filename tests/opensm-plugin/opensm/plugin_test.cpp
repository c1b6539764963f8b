// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin inside OpenSM on ibsim: it loads, answers PathRecord queries with its own policy
// (OpenSM itself runs with none), leaves OpenSM answering when its policy is bad, and refuses
// to load with bad options while OpenSM goes on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <grp.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::osmp {
namespace {

using testing::control;
using testing::eventually;

using testbed::IbFabric;
using testing::kAnswering;
using testing::plugin_fabric_options;
using testing::wait_for_log;

const std::string kSl5Policy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 5\nend-qos-level\nend-qos-levels\n";
const std::string kBadPolicy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 99\nend-qos-level\nend-qos-levels\n";

// saquery -p node001 -> node002, its SL; -1 without a record.
int path_sl(const IbFabric& f) {
  auto r = f.run_at(
      "node001", {"saquery", "-p", "--slid", f.lid_arg("node001"), "--dlid", f.lid_arg("node002")});
  auto records = testbed::parse_saquery_output(r.output);
  if (r.exit_code != 0 || records.empty()) return -1;
  auto a = testbed::path_answer(records[0]);
  return a ? a->sl : -1;
}

TEST(PluginInOpenSm, AnswersPathRecordsWithItsOwnPolicy) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  // Loaded into the OpenSM that runs (Debian's 3.3.23, or another build the plugin was built
  // against: scripts/check-other-opensm.sh), which logs its version first.
  const std::string log = f.opensm_log();
  const std::string loaded = "rdma-qos plugin: loaded into ";
  const size_t at = log.find(loaded);
  ASSERT_NE(at, std::string::npos) << log;
  const std::string version =
      log.substr(at + loaded.size(), log.find(':', at + loaded.size()) - at - loaded.size());
  EXPECT_EQ(version.rfind("OpenSM 3.3.", 0), 0u) << version;
  EXPECT_NE(log.find("-> " + version + "\n"), std::string::npos) << version << "\n" << log;
  EXPECT_EQ(path_sl(f), 5);  // OpenSM alone, without a policy, answers SL 0
}

TEST(PluginInOpenSm, ABadPolicyAtStartLeavesOpenSmAnsweringAndSaysWhere) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kBadPolicy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, "OpenSM's own PathRecord and MultiPathRecord handlers answer"))
      << f.opensm_log();
  EXPECT_NE(f.opensm_log().find(f.dir() + "/plugin-policy.conf:4:"), std::string::npos)
      << f.opensm_log();
  EXPECT_EQ(path_sl(f), 0);  // OpenSM's own answer
}

TEST(PluginInOpenSm, BadOptionsRefuseTheLoadAndOpenSmGoesOn) {
  auto o = plugin_fabric_options("polcy=/x");
  IbFabric f(o);
  EXPECT_NE(f.opensm_log().find("event_plugin_options: unknown key 'polcy'"), std::string::npos)
      << f.opensm_log();
  EXPECT_EQ(path_sl(f), 0);
}

TEST(PluginInOpenSm, TheControlSocketReloadsThePolicyAndKeepsItWhenTheNewOneIsBad) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  ASSERT_EQ(path_sl(f), 5);
  const std::string policy = f.dir() + "/plugin-policy.conf";

  std::ofstream(policy) << "qos-levels\nqos-level\nname: DEFAULT\nsl: 6\nend-qos-level\n"
                           "end-qos-levels\n";
  nlohmann::json reply = control(f, "reload");
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(path_sl(f), 6);

  std::ofstream(policy) << kBadPolicy;
  reply = control(f, "reload");
  EXPECT_EQ(reply["ok"], false) << reply.dump();
  ASSERT_TRUE(reply["diagnostics"].is_array() && !reply["diagnostics"].empty()) << reply.dump();
  EXPECT_EQ(reply["diagnostics"][0].get<std::string>().rfind(policy + ":4:", 0), 0u)
      << reply.dump();
  EXPECT_EQ(path_sl(f), 6);

  nlohmann::json stats = control(f, "stats");
  ASSERT_TRUE(stats.is_object()) << stats.dump();
  EXPECT_EQ(stats["plugin"]["answering"], true) << stats.dump();
  EXPECT_GE(stats["requests"].get<int>(), 3) << stats.dump();
  EXPECT_EQ(stats["policy"]["reloads"], 1) << stats.dump();
  EXPECT_EQ(stats["policy"]["reload_failures"], 1) << stats.dump();

  testbed::ProcessOptions text;
  text.argv = {RDMA_QOS_CLI, "opensm-plugin", "stats", "--socket", f.dir() + "/plugin.sock"};
  auto shown = testbed::run(text, std::chrono::seconds(20));
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_NE(shown.output.find("answering"), std::string::npos) << shown.output;
}

// max-records: a table longer than the bound (every path of the fabric, asked by saquery) is
// answered ERR_NO_RESOURCES and counted; a Get is never cut.
TEST(PluginInOpenSm, ATableOverMaxRecordsIsRefusedAndGetsStillAnswered) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf max-records=1");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  auto table = f.run_at("node001", {"saquery", "-p"});
  EXPECT_TRUE(testbed::parse_saquery_output(table.output).empty()) << table.output;
  EXPECT_EQ(path_sl(f), 5);
  nlohmann::json stats = control(f, "stats");
  ASSERT_TRUE(stats.is_object()) << stats.dump();
  EXPECT_GE(stats["bounded"]["records"].get<int>(), 1) << stats.dump();
}

// OpenSM re-reads its configuration on SIGHUP and sweeps again; the plugin builds a new model at
// the end of that sweep and reads its policy file again with it.
TEST(PluginInOpenSm, ThePolicyIsReadAgainWhenOpenSmRereadsItsConfiguration) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  ASSERT_EQ(path_sl(f), 5);
  std::ofstream(f.dir() + "/plugin-policy.conf")
      << "qos-levels\nqos-level\nname: DEFAULT\nsl: 7\nend-qos-level\nend-qos-levels\n";
  ASSERT_EQ(f.pids().size(), 2u);
  ::kill(f.pids()[1], SIGHUP);  // OpenSM
  int sl = -1;
  for (int i = 0; i < 100 && sl != 7; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sl = path_sl(f);
  }
  EXPECT_EQ(sl, 7) << f.opensm_log();
}

// A sweep's new model with the policy file unchanged keeps the compiled policy (a 100k-rule
// policy takes seconds to compile); a changed file is compiled at the next model.
TEST(PluginInOpenSm, ANewModelCompilesThePolicyOnlyWhenTheFileChanged) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  nlohmann::json before = control(f, "stats");
  ASSERT_TRUE(before.is_object());
  const int compiled = before["policy"]["compiles"].get<int>();
  const int kept = before["policy"]["compiles_skipped"].get<int>();

  ASSERT_EQ(control(f, "rediscover")["ok"], true);
  nlohmann::json after = control(f, "stats");
  EXPECT_EQ(after["policy"]["compiles"].get<int>(), compiled) << after.dump();
  EXPECT_EQ(after["policy"]["compiles_skipped"].get<int>(), kept + 1) << after.dump();

  std::ofstream(f.dir() + "/plugin-policy.conf")
      << "qos-levels\nqos-level\nname: DEFAULT\nsl: 7\nend-qos-level\nend-qos-levels\n";
  ASSERT_EQ(control(f, "rediscover")["ok"], true);
  after = control(f, "stats");
  EXPECT_EQ(after["policy"]["compiles"].get<int>(), compiled + 1) << after.dump();
  EXPECT_EQ(path_sl(f), 7);
}

// `rdma-qos opensm-plugin stats --format prometheus`: rdma-qos-sad's families under the plugin's
// prefix, from a live plugin that answered; promtool accepts it where it is installed.
TEST(PluginInOpenSm, StatsInPrometheusFormatPassPromtool) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  ASSERT_EQ(path_sl(f), 5);
  const std::string file = f.dir() + "/plugin.prom";
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin",         "stats", "--format", "prometheus",
            "--socket",   f.dir() + "/plugin.sock"};
  auto prom = testbed::run(p, std::chrono::seconds(20));
  ASSERT_EQ(prom.exit_code, 0) << prom.output;
  for (const char* line : {
           "# TYPE rdma_qos_opensm_plugin_requests_total counter\n",
           "rdma_qos_opensm_plugin_requests_total{method=\"GetTable\",attribute=\"PathRecord\"} ",
           "rdma_qos_opensm_plugin_responses_total{status=\"SUCCESS\"} ",
           "rdma_qos_opensm_plugin_pairs_total{level=\"",
           "\",result=\"record\"} ",
           "# TYPE rdma_qos_opensm_plugin_answer_duration_seconds histogram\n",
           "rdma_qos_opensm_plugin_answer_duration_seconds_bucket{le=\"+Inf\"} ",
           "rdma_qos_opensm_plugin_answering 1\n",
       })
    EXPECT_NE(prom.output.find(line), std::string::npos) << line << " in\n" << prom.output;
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  std::ofstream(file) << prom.output;
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << prom.output;
}

// control-socket-group=NAME: the socket is given to the group with mode 0660, so a monitoring
// user in it reads the stats without root (reload and rediscover stay root's).
TEST(PluginInOpenSm, AControlSocketGroupMayReadTheSocket) {
  const group* daemon_group = getgrnam("daemon");
  ASSERT_NE(daemon_group, nullptr);
  const gid_t gid = daemon_group->gr_gid;
  auto o = plugin_fabric_options("control-socket-group=daemon");
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, "group daemon may read the stats")) << f.opensm_log();
  struct stat st {};
  ASSERT_EQ(::stat((f.dir() + "/plugin.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, gid);
}

// `rdma-qos opensm-plugin status --json`: its exit code and reply.
std::pair<int, nlohmann::json> status(const IbFabric& f) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin", "status",
            "--json",     "--socket",      f.dir() + "/plugin.sock"};
  auto r = testbed::run(p, std::chrono::seconds(20));
  size_t start = r.output.find('{');
  return {r.exit_code, start == std::string::npos
                           ? nlohmann::json()
                           : nlohmann::json::parse(r.output.substr(start), nullptr, false)};
}

// A host swapped for one with fewer ports: the policy names port 2 of "swap01 HCA-1", which the
// host swapped in does not have, so the policy no longer compiles on OpenSM's subnet. The
// plugin must not keep answering from the model before the swap: OpenSM's own handlers answer
// (status exit 1, OpenSM's log at error level) until the two-port host is back.
TEST(PluginInOpenSm, ANodeSwapThatBreaksThePolicyHandsEveryQueryToOpenSmUntilItFits) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.ibsim_console = true;
  o.files["plugin-policy.conf"] =
      "port-groups\nport-group\nname: Swap\nport-name: \"swap01 HCA-1/P2\"\nend-port-group\n"
      "end-port-groups\n" +
      kSl5Policy;
  // Two hosts with one NodeDescription, neither cabled yet: OpenSM has never seen them.
  o.topology.netfile +=
      "caguid=0x0002c90300ee2000\nCa 2 \"dual01\" # \"swap01 HCA-1\"\n\n"
      "caguid=0x0002c90300ee3000\nCa 1 \"single01\" # \"swap01 HCA-1\"\n\n";
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  const pid_t opensm = f.pids()[1];
  // The two-port host, cabled to leaf01 and leaf02's free port 8: the policy compiles.
  f.ibsim_command("Link \"leaf01\"[8] \"dual01\"[1]");
  f.ibsim_command("Link \"leaf02\"[8] \"dual01\"[2]");
  ::kill(opensm, SIGHUP);
  ASSERT_TRUE(eventually([&] { return status(f).second.value("endpoints", 0) == 15; }))
      << status(f).second.dump();
  EXPECT_EQ(path_sl(f), 5);
  EXPECT_EQ(status(f).first, 0);

  // The swap: the two-port host out, the one-port host in its place.
  f.ibsim_command("Unlink \"dual01\"");
  f.ibsim_command("Link \"leaf01\"[8] \"single01\"[1]");
  ::kill(opensm, SIGHUP);
  ASSERT_TRUE(eventually([&] { return status(f).first == 1; })) << f.opensm_log();
  auto [code, reply] = status(f);
  EXPECT_FALSE(reply.value("answering", true));
  EXPECT_EQ(reply.value("reason", ""), "the policy or partitions have errors");
  EXPECT_EQ(path_sl(f), 0);  // OpenSM's own answer (it runs without a policy)
  EXPECT_NE(f.opensm_log().find("has no port 2"), std::string::npos);
  EXPECT_NE(f.opensm_log().find("the policy or partitions have errors: OpenSM's own PathRecord "
                                "and MultiPathRecord handlers answer"),
            std::string::npos);

  // The two-port host back: the plugin answers again.
  f.ibsim_command("Unlink \"single01\"");
  f.ibsim_command("ReLink \"dual01\"");
  ::kill(opensm, SIGHUP);
  EXPECT_TRUE(eventually([&] { return status(f).first == 0; })) << f.opensm_log();
  EXPECT_EQ(path_sl(f), 5);
}

}  // namespace
}  // namespace rdmaqos::osmp
