// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SM's LID moving under a running SA client: the master OpenSM (at sm01) stops and a
// standby at node008 takes over, so every port's SM LID changes. A client that keeps its port
// open (sad_load, 16 queries in flight, the SA LID from the port) follows it: its queries fail
// while no SA answers and are answered by the new SM once it is master. The standby's policy
// gives iSER another SL, so the answers tell which SM gave them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Short SMInfo polling, so the standby notices the master's absence in seconds.
const std::string kPolling = "sminfo_polling_timeout 500\npolling_retry_number 2\n";

TEST(SaClientSmMove, AClientFollowsTheSmToItsNewLid) {
  auto o = rdmaqos::testbed::fabric_options(rdmaqos::testbed::make_fat_tree({}));
  o.policy = rdmaqos::testbed::sample_policy({.gold = false, .sdp_ulp = false});  // iSER: SL 3
  o.opensm_conf = kPolling;
  o.opensm_args = {"-p", "10"};
  rdmaqos::testbed::IbFabric f(o);
  const std::string dir = f.dir();

  // The standby at node008, iSER at SL 6 in its policy.
  std::string standby_policy = rdmaqos::testbed::sample_policy({.gold = false, .sdp_ulp = false});
  const auto sl3 = standby_policy.find("sl: 3");
  ASSERT_NE(sl3, std::string::npos) << standby_policy;
  standby_policy.replace(sl3, 5, "sl: 6");
  std::ofstream(dir + "/standby-policy.conf") << standby_policy;
  std::ofstream(dir + "/standby.conf") << "force_log_flush TRUE\n" << kPolling;
  rdmaqos::testbed::ProcessOptions p;
  p.argv = {"opensm",
            "-F",
            dir + "/standby.conf",
            "-f",
            dir + "/standby.log",
            "-s",
            "0",
            "-Q",
            "-Y",
            dir + "/standby-policy.conf",
            "-p",
            "1"};
  p.env = f.client_env("node008");
  p.env["OSM_TMP_DIR"] = dir + "/standby";
  p.env["OSM_CACHE_DIR"] = dir + "/standby";
  std::filesystem::create_directories(dir + "/standby");
  p.cwd = dir;
  p.output_path = dir + "/standby.out";
  rdmaqos::testbed::Process standby = rdmaqos::testbed::Process::spawn(p);
  bool is_standby = false;
  for (int i = 0; i < 150 && !is_standby; ++i) {
    std::this_thread::sleep_for(200ms);
    is_standby = slurp(dir + "/standby.out").find("STANDBY") != std::string::npos;
  }
  ASSERT_TRUE(is_standby) << slurp(dir + "/standby.out");

  const std::string stop_file = dir + "/stop-load";
  rdmaqos::testbed::ProcessOptions load;
  load.argv = {
      RDMA_QOS_SAD_LOAD, "--dlid",  f.lid_arg("node002"), "--sl-sid", "3", "--sl-plain", "0",
      "--stop-file",     stop_file, "--seconds",          "90"};
  load.env = f.client_env("node001");
  load.cwd = dir;
  load.output_path = dir + "/load.log";
  rdmaqos::testbed::Process loader = rdmaqos::testbed::Process::spawn(load);
  std::this_thread::sleep_for(1s);

  f.stop_sm();
  bool master = false;
  for (int i = 0; i < 200 && !master; ++i) {
    std::this_thread::sleep_for(200ms);
    master = slurp(dir + "/standby.out").find("Entering MASTER state") != std::string::npos;
  }
  ASSERT_TRUE(master) << slurp(dir + "/standby.out");
  // The kernel shows the port's new SM LID in sysfs once the new master set it; umad2sim writes
  // a sysfs copy per process when the process starts and never again, so the test writes the
  // client's copy as the kernel would (the standby at node008 is the SM now).
  const std::string sm_lid =
      dir + "/sys-" + std::to_string(loader.pid()) + "/sys/class/infiniband/ibsim0/ports/1/sm_lid";
  ASSERT_TRUE(std::filesystem::exists(sm_lid)) << sm_lid;
  std::ofstream(sm_lid) << "0x" << std::hex << f.lid("node008") << "\n";
  // The client re-reads its port's SM LID every second; its queries to the old LID that were in
  // flight wait out their timeout first, and on a loaded machine the new master's SA may take
  // seconds more to answer: 3 s was once too short for any answer from it (1 run in 11).
  std::this_thread::sleep_for(10s);
  std::ofstream(stop_file) << "";
  ASSERT_EQ(loader.wait_for(30s), 0) << slurp(dir + "/load.log");
  standby.stop();

  nlohmann::json counts;
  std::istringstream in(slurp(dir + "/load.log"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') counts = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(counts.is_object()) << slurp(dir + "/load.log");
  std::printf("load: %s\n", counts.dump().c_str());
  EXPECT_GT(counts["answered"].get<int>(), 0) << counts.dump();
  // iSER answered with the standby's SL 6 (sad_load counts it wrong against the master's SL 3):
  // the client asked the new SM.
  EXPECT_GT(counts["wrong"].get<int>(), 0) << "no answer from the new SM: " << counts.dump();
}

}  // namespace
