// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The preload module through the node's path service, against OpenSM on ibsim: rdma-qos-lsd
// serves its path socket at node001 (umad2sim preloaded into it, no kernel listener), and the
// rdma_cm program runs with the module alone, no umad2sim: it has no umad device at all, as an
// unprivileged program has none, and still installs OpenSM's path for the policy's level. The
// ranks of a node asking one path at once cost the SA one query.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "stand_in_calls.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using rdmaqos::testbed::IbFabric;

class IbRoutePathService : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = rdmaqos::testbed::start_fat_tree(
        rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true}));
    const std::string dir = fabric_->dir();
    socket_ = dir + "/paths.sock";
    control_ = dir + "/lsd.sock";
    // The CA name umad2sim gives node001's port, which the module names in its questions.
    auto cas = fabric_->run_at("node001", {"ibstat", "-l"});
    std::istringstream(cas.output) >> device_;
    std::ofstream(dir + "/lsd.conf").flush();
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_LSD,       "--foreground", "--no-kernel", "--path-socket", socket_,
              "--control-socket", control_,       "--log-level", "info"};
    p.env = fabric_->client_env("node001");
    p.env["RDMA_QOS_CONFIG"] = dir + "/lsd.conf";
    p.cwd = dir;
    p.output_path = dir + "/lsd.log";
    lsd_ = std::make_unique<rdmaqos::testbed::Process>(rdmaqos::testbed::Process::spawn(p));
    for (int i = 0; i < 200 && access(socket_.c_str(), F_OK) != 0; ++i)
      std::this_thread::sleep_for(50ms);
  }
  static void TearDownTestSuite() {
    lsd_.reset();
    fabric_.reset();
  }

  struct ClientRun {
    int exit_code = -1;
    std::string output;
    std::vector<json> calls;
  };
  // The rdma_cm program over the stand-in librdmacm with the preload module only (no umad2sim),
  // at node001's GUID towards node002, asking the node's path service.
  static ClientRun client(const std::string& name, const std::string& port,
                          const std::vector<std::string>& env = {},
                          const std::string& route_timeout_ms = "5000") {
    const std::string dir = fabric_->dir();
    const std::string log = dir + "/fake-rdmacm-" + name + ".log";
    const std::string config = dir + "/rdma-qos-" + name + ".conf";
    std::remove(log.c_str());
    std::ofstream(config).flush();
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {"env",
              "-u",
              "LD_PRELOAD",
              "LD_PRELOAD=" RDMA_QOS_PRELOAD_MODULE,
              "FAKE_RDMACM_DEVICE=" + device_,
              "FAKE_RDMACM_SGUID=" + std::to_string(fabric_->port_guid("node001")),
              "FAKE_RDMACM_DGUID=" + std::to_string(fabric_->port_guid("node002")),
              "FAKE_RDMACM_LOG=" + log,
              "RDMA_QOS_CONFIG=" + config,
              "RDMA_QOS_SA=on",
              "RDMA_QOS_PATH_SERVICE=" + socket_};
    p.argv.insert(p.argv.end(), env.begin(), env.end());
    p.argv.insert(p.argv.end(), {RDMA_QOS_IB_ROUTE_CLIENT, "async", port, route_timeout_ms});
    p.cwd = dir;
    p.output_path = dir + "/client-" + name + ".out";
    auto proc = rdmaqos::testbed::Process::spawn(p);
    ClientRun out;
    out.exit_code = proc.wait_for(20s).value_or(-1);
    std::ifstream o(p.output_path);
    out.output.assign(std::istreambuf_iterator<char>(o), {});
    out.calls = rdmaqos::testing::stand_in_calls(log);
    return out;
  }
  static std::vector<json> calls_named(const ClientRun& r, const std::string& name) {
    return rdmaqos::testing::calls_named(r.calls, name);
  }
  static std::string lsd_log() {
    std::ifstream in(fabric_->dir() + "/lsd.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The path service's counters, from `rdma-qos kernel stats --json`.
  static json stats() {
    auto r = fabric_->run_at("node001",
                             {RDMA_QOS_CLI, "kernel", "stats", "--json", "--socket", control_});
    auto j = json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    return j;
  }

  static inline std::unique_ptr<IbFabric> fabric_;
  static inline std::unique_ptr<rdmaqos::testbed::Process> lsd_;
  static inline std::string socket_, control_, device_;
};

// iSER's Service-ID (port 3260) selects SL 3 at OpenSM; the program has no umad device.
TEST_F(IbRoutePathService, ProgramWithoutUmadGetsTheSaPathThroughTheNodeService) {
  ASSERT_TRUE(lsd_->running()) << lsd_log();
  auto r = client("iser", "3260", {"RDMA_QOS_LOG=debug"});
  ASSERT_EQ(r.exit_code, 0) << r.output << lsd_log();
  auto set = calls_named(r, "rdma_set_option");
  ASSERT_EQ(set.size(), 1u) << r.output << lsd_log();
  EXPECT_EQ(set[0].value("sl", -1), 3);
  EXPECT_TRUE(calls_named(r, "rdma_resolve_route").empty()) << r.output;
  // No umad port was opened: the module never fell back to its own client.
  EXPECT_EQ(r.output.find("cannot reach the SA"), std::string::npos) << r.output;
}

TEST_F(IbRoutePathService, QosClassReachesTheSaThroughTheService) {
  auto r = client("gold", "3260", {"RDMA_QOS_CLASS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.output << lsd_log();
  auto set = calls_named(r, "rdma_set_option");
  ASSERT_EQ(set.size(), 1u) << r.output;
  EXPECT_EQ(set[0].value("sl", -1), 5);   // GOLD
  EXPECT_EQ(set[0].value("mtu", -1), 3);  // GOLD's mtu-limit
}

// Eight ranks of node001 connect to node002 on one Service-ID at the same moment: the SA sees
// one PathRecord query for all of them (the service's SA query count rises by one).
TEST_F(IbRoutePathService, RanksOfANodeAskingTogetherCostTheSaOneQuery) {
  // The service opens its SA client on the first question (a umad open through umad2sim, then
  // ClassPortInfo): asked once before, so that the burst below measures the sharing alone.
  ASSERT_EQ(client("warm", "3260").exit_code, 0);
  json before = stats();
  std::vector<std::future<ClientRun>> ranks;
  for (int i = 0; i < 8; ++i)
    ranks.push_back(std::async(std::launch::async, [i] {
      return client("rank" + std::to_string(i), "4791", {"RDMA_QOS_LOG=debug"});
    }));
  for (auto& f : ranks) {
    ClientRun r = f.get();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto set = calls_named(r, "rdma_set_option");
    ASSERT_EQ(set.size(), 1u) << r.output << lsd_log();
    EXPECT_EQ(set[0].value("sl", -1), 0);  // the default level
  }
  json after = stats();
  auto sent = [](const json& j) {
    const auto at = "/path_service/sa_requests/path_record"_json_pointer;
    return j.contains(at) ? j[at].get<int>() : -1;
  };
  EXPECT_EQ(sent(after) - sent(before), 1) << before.dump() << "\n" << after.dump();
}

// Without the service (nothing listens at the socket) the module asks the SA itself: here it
// has no umad device either, so it falls back to the kernel's route resolution, and says why.
TEST_F(IbRoutePathService, AbsentServiceLeavesTheProgramToItsOwnSaClient) {
  auto r =
      client("absent", "3260",
             {"RDMA_QOS_PATH_SERVICE=" + fabric_->dir() + "/nobody.sock", "RDMA_QOS_LOG=info"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no node path service at"), std::string::npos) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u) << r.output;
}

}  // namespace
