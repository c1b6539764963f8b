// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SM handover: a standby OpenSM with its own plugin takes over when the master stops, and its
// plugin answers with the same policy.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;

const std::string kSl5Policy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 5\nend-qos-level\nend-qos-levels\n";
// Short SMInfo polling, so the standby notices the master's absence in seconds.
const std::string kPolling = "sminfo_polling_timeout 500\npolling_retry_number 2\n";

int path_sl(const IbFabric& f) {
  auto r = f.run_at(
      "node001", {"saquery", "-p", "--slid", f.lid_arg("node001"), "--dlid", f.lid_arg("node002")});
  auto records = testbed::parse_saquery_output(r.output);
  if (r.exit_code != 0 || records.empty()) return -1;
  auto a = testbed::path_answer(records[0]);
  return a ? a->sl : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(PluginHandover, AStandbyOpenSmWithItsOwnPluginServesTheSameAnswers) {
  auto o = testing::plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = kSl5Policy;
  o.opensm_conf += kPolling;
  o.opensm_args = {"-p", "10"};
  IbFabric f(o);
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering)) << f.opensm_log();
  ASSERT_EQ(path_sl(f), 5);

  // The standby at node008: its own configuration, log and control socket.
  const std::string dir = f.dir();
  std::ofstream(dir + "/standby.conf")
      << "force_log_flush TRUE\n"
      << kPolling << "event_plugin_name rdma-qos-opensm\n"
      << "event_plugin_options policy=" << dir << "/plugin-policy.conf control-socket=" << dir
      << "/standby.sock\n";
  testbed::ProcessOptions p;
  p.argv = {"opensm", "-F", dir + "/standby.conf", "-f", dir + "/standby.log", "-s", "0", "-Q",
            "-p",     "1"};
  p.env = f.client_env("node008");
  p.env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
  p.env["OSM_TMP_DIR"] = dir + "/standby";
  p.env["OSM_CACHE_DIR"] = dir + "/standby";
  std::filesystem::create_directories(dir + "/standby");
  p.cwd = dir;
  p.output_path = dir + "/standby.out";
  testbed::Process standby = testbed::Process::spawn(p);
  bool is_standby = false;
  for (int i = 0; i < 150 && !is_standby; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    is_standby = slurp(dir + "/standby.out").find("STANDBY") != std::string::npos;
  }
  ASSERT_TRUE(is_standby) << slurp(dir + "/standby.out") << slurp(dir + "/standby.log");

  f.stop_sm();
  int sl = -1;
  for (int i = 0; i < 200 && sl != 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (slurp(dir + "/standby.log").find("rdma-qos plugin: answering") != std::string::npos)
      sl = path_sl(f);
  }
  EXPECT_EQ(sl, 5) << slurp(dir + "/standby.out") << slurp(dir + "/standby.log");
  EXPECT_NE(slurp(dir + "/standby.out").find("Entering MASTER state"), std::string::npos);
  standby.stop();
}

}  // namespace
}  // namespace rdmaqos::osmp
