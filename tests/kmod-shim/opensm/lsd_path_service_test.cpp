// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node path service end to end: rdma-qos-lsd --no-kernel at node001 of an ibsim fabric
// (umad2sim preloaded into it alone) whose OpenSM enforces the sample iSER / GOLD policy, and
// several processes without umad2sim, so without any umad access, asking the same iSER path
// through its socket at once. Every one gets OpenSM's path at the policy's SL, and the daemon's
// counters show a single SA request for all of them. A reload (SIGHUP) empties the cache: the
// next question goes to the SA again.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <thread>

#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_service_client.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;

constexpr uint64_t kIserServiceId = 0x0000000001060CBCULL;  // iSER: TCP port space, port 3260

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LsdPathServiceOpenSm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = testbed::start_fat_tree(testbed::sample_policy({.sdp_ulp = false}));
  }
  static void TearDownTestSuite() { fabric_.reset(); }
  void TearDown() override {
    if (daemon_) {
      daemon_->stop();
      if (HasFailure()) std::cerr << "rdma-qos-lsd log:\n" << read_file(log_path_) << "\n";
    }
  }

  void start() {
    const std::string config = fabric_->dir() + "/lsd-paths.conf";
    std::ofstream(config) << "log_level debug\n";
    socket_ = fabric_->dir() + "/paths.sock";
    control_ = fabric_->dir() + "/lsd-paths-control.sock";
    log_path_ = fabric_->dir() + "/lsd-paths.log";
    testbed::ProcessOptions p;
    // One SA agent: umad2sim gives the process's SA responses to its newest agent.
    p.argv = {RDMA_QOS_LSD, "--foreground",     "--no-kernel", "--path-socket",
              socket_,      "--control-socket", control_};
    p.env = fabric_->client_env("node001");
    p.env["RDMA_QOS_CONFIG"] = config;
    p.cwd = fabric_->dir();
    p.output_path = log_path_;
    daemon_ = std::make_unique<testbed::Process>(testbed::Process::spawn(p));
    for (auto until = std::chrono::steady_clock::now() + 10s;;) {
      auto fd = sa::connect_path_service(socket_);
      if (fd) {
        close(*fd);
        break;
      }
      fd.error();
      ASSERT_LT(std::chrono::steady_clock::now(), until) << read_file(log_path_);
      std::this_thread::sleep_for(50ms);
    }
  }

  // path_ask at node001 for the iSER path to node002, with the plain environment: no
  // umad2sim, no simulated umad device.
  testbed::ProcessOptions asker(int i) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_PATH_ASK,
              socket_,
              "ibsim0",
              "1",
              sa::format_gid(sa::make_gid(0xfe80000000000000ULL, fabric_->port_guid("node001"))),
              sa::format_gid(sa::make_gid(0xfe80000000000000ULL, fabric_->port_guid("node002"))),
              fmt::format("{:#x}", kIserServiceId)};
    p.output_path = fabric_->dir() + fmt::format("/path-ask-{}.out", i);
    return p;
  }

  static inline std::unique_ptr<IbFabric> fabric_;
  std::unique_ptr<testbed::Process> daemon_;
  std::string socket_, control_, log_path_;
};

TEST_F(LsdPathServiceOpenSm, ProcessesWithoutUmadGetThePolicysPathFromOneSaQuery) {
  start();
  constexpr int kAskers = 8;
  std::vector<testbed::Process> askers;
  for (int i = 0; i < kAskers; ++i) {
    std::remove(asker(i).output_path.c_str());
    askers.push_back(testbed::Process::spawn(asker(i)));
  }
  const uint16_t lid1 = fabric_->lid("node001");
  const uint16_t lid2 = fabric_->lid("node002");
  for (int i = 0; i < kAskers; ++i) {
    auto code = askers[i].wait_for(20s);
    const std::string out = read_file(asker(i).output_path);
    ASSERT_EQ(code, 0) << i << ": " << out;
    auto j = nlohmann::json::parse(out);
    ASSERT_TRUE(j["ok"]) << out;
    ASSERT_EQ(j["records"].size(), 1u) << out;
    // The sample policy's iSER level: SL 3.
    EXPECT_EQ(j["records"][0]["sl"], 3) << out;
    EXPECT_EQ(j["records"][0]["slid"], lid1) << out;
    EXPECT_EQ(j["records"][0]["dlid"], lid2) << out;
  }
  auto stats = sad::control_call(control_, {{"command", "stats"}}, 5s);
  ASSERT_TRUE(stats) << stats.error().message;
  const nlohmann::json& p = (*stats)["stats"]["path_service"];
  EXPECT_EQ(p["sa_requests"]["path_record"], 1) << p.dump();
  EXPECT_EQ(p["questions"]["path_record"], kAskers) << p.dump();
  EXPECT_EQ(p["answers"]["answered"], kAskers) << p.dump();
  // Each asker either joined the one in flight or found its answer in the cache.
  EXPECT_EQ(p["joined"].get<int>() + p["cache_hits"].get<int>(), kAskers - 1) << p.dump();
}

TEST_F(LsdPathServiceOpenSm, ReloadEmptiesTheCache) {
  start();
  auto path_service_stats = [&] {
    auto stats = sad::control_call(control_, {{"command", "stats"}}, 5s);
    EXPECT_TRUE(stats) << stats.error().message;
    return stats ? (*stats)["stats"] : nlohmann::json::object();
  };
  auto ask = [&](int i) {
    std::remove(asker(i).output_path.c_str());
    auto code = testbed::Process::spawn(asker(i)).wait_for(20s);
    EXPECT_EQ(code, 0) << read_file(asker(i).output_path);
  };
  ask(0);
  ask(1);
  auto before = path_service_stats();
  EXPECT_EQ(before["path_service"]["sa_requests"]["path_record"], 1) << before.dump();
  EXPECT_EQ(before["path_service"]["cache_hits"], 1) << before.dump();
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  for (auto until = std::chrono::steady_clock::now() + 10s;;) {
    if (path_service_stats()["reloads"]["ok"] == 1) break;
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "no reload: " << read_file(log_path_);
    std::this_thread::sleep_for(50ms);
  }
  ask(2);
  auto after = path_service_stats();
  EXPECT_EQ(after["path_service"]["sa_requests"]["path_record"], 2) << after.dump();
  EXPECT_EQ(after["path_service"]["cache_hits"], 1) << after.dump();
}

}  // namespace
}  // namespace rdmaqos::kmod
