// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad and its clients under faults, on ibsim: the daemon killed and started again under
// a 16-deep load, and umad sends and receives failing in the daemon and in a client. Each test
// starts its own fabric: OpenSM configures it, then our SA takes over at the SM's port.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;
using testbed::RunResult;

// iSER (Service-ID 0x1060CBC) gets SL 3; everything else the default level's SL 0.
const std::string kPolicy = testbed::sample_policy({.gold = false, .sdp_ulp = false});

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The JSON line sad_load printed last.
nlohmann::json load_counts(const std::string& log) {
  std::istringstream in(slurp(log));
  nlohmann::json counts;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') counts = nlohmann::json::parse(line, nullptr, false);
  return counts;
}

class SadFaults : public ::testing::Test {
 protected:
  void SetUp() override { start_fabric(false); }

  // The default fat tree with the policy, OpenSM stopped once it configured it; `console`: with
  // ibsim's console, for links to flap.
  void start_fabric(bool console) {
    testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
    o.policy = kPolicy;
    o.ibsim_console = console;
    fabric_ = std::make_unique<IbFabric>(o);
    policy_ = fabric_->dir() + "/sad-policy.conf";
    socket_ = fabric_->dir() + "/sad.sock";
    std::ofstream(policy_) << kPolicy;
    fabric_->stop_sm();
  }

  void TearDown() override {
    if (sad_) sad_->stop();
    if (HasFailure()) std::cerr << "rdma-qos-sad log:\n" << slurp(fabric_->dir() + "/sad.log");
  }

  // Starts our SA at the SM's port, with `env` added (an LD_PRELOAD goes before the fabric's
  // own); returns once ClassPortInfo is answered.
  void start_sad(const std::map<std::string, std::string>& env = {}) {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD,
              "--policy",
              policy_,
              "--control-socket",
              socket_,
              "--foreground",
              "--rediscover-interval",
              "0"};
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    for (const auto& [k, v] : env) p.env[k] = k == "LD_PRELOAD" ? v + ":" + p.env[k] : v;
    p.cwd = fabric_->dir();
    p.output_path = fabric_->dir() + "/sad.log";
    auto started = fabric_->start_until_answering(p, {"saquery", "-c"});
    sad_ = std::move(started.daemon);
    ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
  }

  // sad_load at node001 towards node002 (window 16, no retries, 3 s per query) until the stop
  // file appears.
  testbed::Process start_load(const std::string& name,
                              const std::map<std::string, std::string>& env = {}) {
    testbed::ProcessOptions load;
    load.argv = {RDMA_QOS_SAD_LOAD,
                 "--dlid",
                 fabric_->lid_arg("node002"),
                 "--sl-sid",
                 "3",
                 "--sl-plain",
                 "0",
                 "--stop-file",
                 stop_file(),
                 "--seconds",
                 "60"};
    load.env = fabric_->client_env("node001");
    for (const auto& [k, v] : env) load.env[k] = k == "LD_PRELOAD" ? v + ":" + load.env[k] : v;
    load.cwd = fabric_->dir();
    load.output_path = fabric_->dir() + "/" + name + ".log";
    return testbed::Process::spawn(load);
  }

  std::string stop_file() const { return fabric_->dir() + "/stop-load"; }

  RunResult cli(const std::string& command) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", command, "--socket", socket_};
    return testbed::run(p, 60s);
  }

  nlohmann::json stats() const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", "stats", "--socket", socket_, "--json"};
    RunResult r = testbed::run(p, 30s);
    return nlohmann::json::parse(r.output, nullptr, false);
  }

  std::unique_ptr<IbFabric> fabric_;
  std::unique_ptr<testbed::Process> sad_;
  std::string policy_, socket_;
};

// SIGKILL under a 16-deep load, then a new daemon: the client's queries while no SA runs fail
// (umad2sim answers a GMP to a port without an SA at once) instead of hanging, it never gets a
// wrong answer, and its queries are answered again by the new daemon; it stops within seconds
// of being told to. RDMA_QOS_FAULT_ROUNDS kills and restarts it that many times (the soak
// variant, sa-responder.soak.sad_killed_and_restarted); one in CI.
TEST_F(SadFaults, KilledAndRestartedUnderLoadClientsRecover) {
  const char* rounds_text = std::getenv("RDMA_QOS_FAULT_ROUNDS");
  const int rounds = rounds_text != nullptr ? std::max(1, std::atoi(rounds_text)) : 1;
  start_sad();
  testbed::Process loader = start_load("load");
  std::this_thread::sleep_for(1s);
  for (int round = 0; round < rounds; ++round) {
    ASSERT_EQ(kill(sad_->pid(), SIGKILL), 0);
    ASSERT_TRUE(sad_->wait_for(10s).has_value()) << "the killed daemon did not end";
    std::this_thread::sleep_for(500ms);  // queries meet no SA
    std::filesystem::remove(socket_);    // a killed daemon leaves its socket behind
    start_sad();
    // The client's queries reach the new daemon (it was waiting out the 3 s of the queries the
    // killed daemon never answered).
    nlohmann::json s;
    for (int i = 0; i < 100; ++i) {
      s = stats();
      if (s.is_object() && s["methods"].value("Get PathRecord", 0) > 0) break;
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(s.is_object());
    ASSERT_GT(s["methods"].value("Get PathRecord", 0), 0)
        << "round " << round << ": the client's queries never reached the new daemon: " << s.dump();
  }
  std::ofstream(stop_file()) << "";
  // A batch of 64 queries at 3 s each, 16 at a time, is the longest the client can take.
  ASSERT_EQ(loader.wait_for(20s), 0)
      << "the load client did not stop: " << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json counts = load_counts(fabric_->dir() + "/load.log");
  ASSERT_TRUE(counts.is_object()) << slurp(fabric_->dir() + "/load.log");
  std::printf("load after %d restart(s): %s\n", rounds, counts.dump().c_str());
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  EXPECT_GT(counts["answered"].get<int>(), 0) << counts.dump();
}

// umad_send and umad_recv failing one call in 10 in the daemon (the shim preloaded before
// umad2sim, faults on once it answers): it counts them and keeps serving, the client loses only
// the queries whose MADs were lost, never gets a wrong answer, and the daemon still answers
// once the faults stop.
TEST_F(SadFaults, UmadErrorsInTheDaemonAreCountedAndServingGoesOn) {
  const std::string trigger = fabric_->dir() + "/umad-faults";
  start_sad({{"LD_PRELOAD", RDMA_QOS_UMAD_FAULT_SHIM},
             {"UMAD_FAULT_FILE", trigger},
             {"UMAD_FAULT_EVERY", "10"}});
  std::ofstream(trigger) << "";
  testbed::Process loader = start_load("load");
  std::this_thread::sleep_for(3s);
  std::filesystem::remove(trigger);
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(loader.wait_for(20s), 0)
      << "the load client did not stop: " << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json counts = load_counts(fabric_->dir() + "/load.log");
  ASSERT_TRUE(counts.is_object()) << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json s = stats();
  std::printf("load: %s\ndaemon: %s\n", counts.dump().c_str(), s.dump().c_str());
  ASSERT_TRUE(sad_->running()) << "the daemon ended under umad errors";
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  EXPECT_GT(counts["answered"].get<int>(), 0) << counts.dump();
  EXPECT_GT(counts["failed"].get<int>(), 0) << "no fault reached the client: " << counts.dump();
  ASSERT_TRUE(s.is_object());
  EXPECT_GT(s["mad_errors"]["send"].get<int>() + s["mad_errors"]["receive"].get<int>(), 0)
      << s.dump();
  // Faults over: a new client is answered in full.
  std::filesystem::remove(stop_file());
  testbed::Process after = start_load("after");
  std::this_thread::sleep_for(1s);
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(after.wait_for(20s), 0);
  const nlohmann::json clean = load_counts(fabric_->dir() + "/after.log");
  EXPECT_EQ(clean["failed"], 0) << clean.dump();
  EXPECT_EQ(clean["wrong"], 0) << clean.dump();
}

// The SA client with umad errors of its own (the shim in the client): a failed send or a lost
// receive costs that query only; the client goes on, and every answer it gets is right.
TEST_F(SadFaults, UmadErrorsInTheClientCostOnlyTheirQueries) {
  start_sad();
  const std::string trigger = fabric_->dir() + "/umad-faults";
  std::ofstream(trigger) << "";
  testbed::Process loader = start_load("load", {{"LD_PRELOAD", RDMA_QOS_UMAD_FAULT_SHIM},
                                                {"UMAD_FAULT_FILE", trigger},
                                                {"UMAD_FAULT_EVERY", "10"}});
  std::this_thread::sleep_for(3s);
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(loader.wait_for(20s), 0)
      << "the load client did not stop: " << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json counts = load_counts(fabric_->dir() + "/load.log");
  ASSERT_TRUE(counts.is_object()) << slurp(fabric_->dir() + "/load.log");
  std::printf("load: %s\n", counts.dump().c_str());
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  EXPECT_GT(counts["answered"].get<int>(), counts["failed"].get<int>()) << counts.dump();
  EXPECT_GT(counts["failed"].get<int>(), 0) << "no fault reached the client: " << counts.dump();
  EXPECT_TRUE(sad_->running());
}

// ibsim killed under a 16-deep load and started again on the same topology. umad2sim connects
// to ibsim once, at start, and gives its process no sign that ibsim went: receives just see
// nothing, sends fail with EIO (libibumad's code for any failed write). So a daemon cannot tell a
// dead simulator from a quiet fabric, and what is asked of it is what an administrator needs
// to restart it: while ibsim is down it keeps running without spinning and its control socket
// answers; the client's queries end within their timeout, never wrongly; a stop ends it at
// once; started again, it serves the new simulator.
TEST_F(SadFaults, IbsimRestartedCutsOffItsClientsAndANewDaemonServes) {
  start_sad();
  testbed::Process loader = start_load("load");
  std::this_thread::sleep_for(1s);
  fabric_->stop_ibsim();
  const auto cpu_before = testbed::cpu_time(sad_->pid());
  std::this_thread::sleep_for(3s);
  const auto cpu_used = testbed::cpu_time(sad_->pid()) - cpu_before;
  ASSERT_TRUE(sad_->running()) << "the daemon ended when ibsim went";
  EXPECT_LT(cpu_used, 300ms) << "the daemon spins without its simulator";
  const nlohmann::json s = stats();
  ASSERT_TRUE(s.is_object()) << "the control socket does not answer without the simulator";
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(loader.wait_for(20s), 0)
      << "the load client did not stop: " << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json counts = load_counts(fabric_->dir() + "/load.log");
  ASSERT_TRUE(counts.is_object()) << slurp(fabric_->dir() + "/load.log");
  std::printf("load: %s\n", counts.dump().c_str());
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  EXPECT_GT(counts["failed"].get<int>(), 0) << counts.dump();

  // The same topology again, configured by OpenSM, which then leaves the SM's port to us.
  fabric_->restart_ibsim();
  fabric_->stop_sm();
  // The old daemon is still on the old simulator: nobody reaches it. A query fails, not hangs.
  RunResult cut_off = fabric_->run_at("node001", {"saquery", "-c"}, 20s);
  EXPECT_FALSE(cut_off.timed_out);
  EXPECT_NE(cut_off.exit_code, 0) << cut_off.output;
  ASSERT_TRUE(sad_->running());
  // A stop ends it cleanly (SIGTERM, as systemctl restart sends), without waiting for the
  // simulator.
  ASSERT_EQ(kill(sad_->pid(), SIGTERM), 0);
  EXPECT_EQ(sad_->wait_for(5s), 0) << "the daemon did not stop cleanly";
  std::filesystem::remove(socket_);
  start_sad();
  std::filesystem::remove(stop_file());
  testbed::Process after = start_load("after");
  std::this_thread::sleep_for(1s);
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(after.wait_for(20s), 0) << slurp(fabric_->dir() + "/after.log");
  const nlohmann::json clean = load_counts(fabric_->dir() + "/after.log");
  std::printf("after the restart: %s\n", clean.dump().c_str());
  EXPECT_EQ(clean["failed"], 0) << clean.dump();
  EXPECT_EQ(clean["wrong"], 0) << clean.dump();
  EXPECT_GT(clean["answered"].get<int>(), 0) << clean.dump();
}

class SadFaultsOnALiveFabric : public SadFaults {
 protected:
  void SetUp() override { start_fabric(true); }
};

// node003's link goes down and up again and again while rdma-qos-sad re-discovers the fabric
// (ibsim's Unlink / ReLink; no SM runs to sweep): each re-discovery either gives a model or
// keeps the last one, the daemon keeps answering the 16-deep load to node002 (every query, with
// the right SL), and once the link stays up the next re-discovery finds every endpoint again.
TEST_F(SadFaultsOnALiveFabric, ALinkFlappingDuringRediscoveryNeverStopsTheAnswers) {
  start_sad();
  testbed::Process loader = start_load("load");
  int rediscovered = 0;
  for (int round = 0; round < 5; ++round) {
    std::thread flap([&] {
      for (int i = 0; i < 4; ++i) {
        fabric_->ibsim_command("Unlink \"node003\"");
        std::this_thread::sleep_for(50ms);
        fabric_->ibsim_command("ReLink \"node003\"");
        std::this_thread::sleep_for(50ms);
      }
    });
    RunResult r = cli("rediscover");
    flap.join();
    rediscovered += r.exit_code == 0 ? 1 : 0;
    std::printf("rediscover %d: exit %d: %s", round, r.exit_code, r.output.c_str());
    ASSERT_TRUE(sad_->running()) << "the daemon ended during a flapping re-discovery";
  }
  RunResult last = cli("rediscover");
  std::ofstream(stop_file()) << "";
  ASSERT_EQ(loader.wait_for(20s), 0)
      << "the load client did not stop: " << slurp(fabric_->dir() + "/load.log");
  const nlohmann::json counts = load_counts(fabric_->dir() + "/load.log");
  std::printf("load: %s\n", counts.dump().c_str());
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  EXPECT_EQ(counts["failed"], 0) << counts.dump();
  EXPECT_GT(counts["answered"].get<int>(), 0) << counts.dump();
  EXPECT_EQ(last.exit_code, 0) << "no re-discovery once the link stayed up: " << last.output;
  EXPECT_NE(last.output.find(std::to_string(fabric_->topology().nodes.size()) + " endpoints"),
            std::string::npos)
      << "node003 missing once its link stayed up: " << last.output;
  const nlohmann::json s = stats();
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["fabric"]["discoveries"].get<int>(), 1 + rediscovered + (last.exit_code == 0 ? 1 : 0))
      << s.dump();
}

}  // namespace
}  // namespace rdmaqos::sad
