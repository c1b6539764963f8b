// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad learns of fabric changes from the SM's traps: OpenSM stays the SM at LID 1, our
// SA runs at node008 with no periodic re-discovery, subscribes to OpenSM's traps 64, 65, 128 and
// 144 (SubnAdmSet(InformInfo)), and OpenSM's reports of a host's link going down and coming back
// (ibsim's Unlink and ReLink) make it re-discover within seconds.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "sad_at_another_port.h"

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;
using testbed::RunResult;

class SadSmTraps : public ::testing::Test {
 protected:
  void SetUp() override {
    testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
    o.policy = testbed::sample_policy({.gold = false, .sdp_ulp = false});
    o.ibsim_console = true;
    // Our port holds issm (ibsim delivers the reports only to an issm holder), which OpenSM
    // takes for another SM: it asks for its SMInfo, which nobody answers, and umad2sim never
    // times the request out, so OpenSM would never finish a sweep again. On hardware the daemon
    // holds no issm at such a port (--issm auto).
    o.opensm_conf = "ignore_other_sm TRUE\n";
    fabric_ = std::make_unique<IbFabric>(std::move(o));
    socket_ = fabric_->dir() + "/sad.sock";
    std::ofstream(fabric_->dir() + "/sad-policy.conf")
        << testbed::sample_policy({.gold = false, .sdp_ulp = false});
  }

  void TearDown() override {
    if (sad_) sad_->stop();
    if (HasFailure() && fabric_) {
      std::ifstream in(fabric_->dir() + "/sad.log");
      std::cerr << "rdma-qos-sad log:\n" << std::string(std::istreambuf_iterator<char>(in), {});
    }
  }

  void start_sad() {
    our_lid_ = fabric_->lid_arg(kNode);
    auto started = start_sad_at(*fabric_, kNode, fabric_->dir() + "/sad-policy.conf", socket_);
    sad_ = std::move(started.daemon);
    ASSERT_EQ(started.probe.exit_code, 0)
        << "rdma-qos-sad did not answer: " << started.probe.output;
  }

  nlohmann::json stats() const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", "stats", "--socket", socket_, "--json"};
    RunResult r = testbed::run(p, 30s);
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
  }

  // The stats once `done` holds for them (checked every 200 ms), or the last ones after
  // `limit`; `took` gets how long it was.
  nlohmann::json stats_when(const std::function<bool(const nlohmann::json&)>& done,
                            std::chrono::seconds limit, std::chrono::milliseconds* took = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    nlohmann::json s;
    while (std::chrono::steady_clock::now() - start < limit) {
      s = stats();
      if (s.is_object() && done(s)) break;
      std::this_thread::sleep_for(200ms);
    }
    if (took) {
      *took = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
    }
    return s;
  }

  // PathRecords our SA gives node001 towards `node` (`rdma-qos path --sa-lid`); -1 when the
  // query failed otherwise than with no record.
  int paths_to(const std::string& node, std::string& why) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI,           "path",  "--json",   "--dlid",
              fabric_->lid_arg(node), "--get", "--sa-lid", our_lid_};
    p.env = fabric_->client_env("node001");
    p.cwd = fabric_->dir();
    RunResult r = testbed::run(p, 20s);
    why = r.output;
    if (r.output.find("SA_NO_RECORDS") != std::string::npos) return 0;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '{') continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("paths")) return static_cast<int>(j["paths"].size());
    }
    return -1;
  }

  static int count(const nlohmann::json& s, const char* trap) {
    const auto& reports = s["sm_traps"]["reports"];
    return reports.contains(trap) ? reports[trap].get<int>() : 0;
  }

  static constexpr const char* kNode = "node008";
  std::unique_ptr<IbFabric> fabric_;
  std::unique_ptr<testbed::Process> sad_;
  std::string socket_, our_lid_;
};

TEST_F(SadSmTraps, AHostGoingAndComingBackIsSeenWithinSeconds) {
  ASSERT_NO_FATAL_FAILURE(start_sad());
  nlohmann::json s = stats_when(
      [](const nlohmann::json& j) { return j["sm_traps"]["subscribed"].size() == 4; }, 20s);
  ASSERT_EQ(s["sm_traps"]["subscribed"], nlohmann::json({64, 65, 128, 144})) << s.dump();
  EXPECT_EQ(s["sm_traps"]["sm_lid"], 1) << s.dump();
  EXPECT_TRUE(s["sm_traps"]["problem"].is_null()) << s.dump();
  const int discoveries = s["fabric"]["discoveries"].get<int>();
  std::string why;
  ASSERT_EQ(paths_to("node003", why), 1) << why;

  // node003's link goes down: the leaf reports trap 128, OpenSM sweeps and reports 65. The test
  // bed's OpenSM runs with sweeps off (-s 0) and makes no sweep of its own here: the SIGHUP
  // stands for the one an OpenSM with its default sweep_interval makes.
  ASSERT_EQ(fabric_->pids().size(), 2u);
  fabric_->ibsim_command("Unlink \"node003\"");
  kill(fabric_->pids()[1], SIGHUP);
  std::chrono::milliseconds took{};
  s = stats_when(
      [&](const nlohmann::json& j) {
        return count(j, "65") >= 1 && j["fabric"]["discoveries"].get<int>() > discoveries &&
               !j["fabric"]["discovering"].get<bool>();
      },
      30s, &took);
  std::printf("node003 gone: re-discovered after %lld ms; %s\n",
              static_cast<long long>(took.count()), s["sm_traps"].dump().c_str());
  ASSERT_GE(count(s, "65"), 1) << s.dump();
  EXPECT_GE(count(s, "128"), 1) << s.dump();
  ASSERT_GT(s["fabric"]["discoveries"].get<int>(), discoveries) << s.dump();
  EXPECT_EQ(paths_to("node003", why), 0) << why;
  EXPECT_EQ(paths_to("node002", why), 1) << why;

  // Back again (ibsim sends no trap for it): OpenSM's next sweep finds it and reports 64.
  const int gone = s["fabric"]["discoveries"].get<int>();
  fabric_->ibsim_command("ReLink \"node003\"");
  kill(fabric_->pids()[1], SIGHUP);
  s = stats_when(
      [&](const nlohmann::json& j) {
        return count(j, "64") >= 1 && j["fabric"]["discoveries"].get<int>() > gone &&
               !j["fabric"]["discovering"].get<bool>();
      },
      30s, &took);
  std::printf("node003 back: re-discovered after %lld ms; %s\n",
              static_cast<long long>(took.count()), s["sm_traps"].dump().c_str());
  ASSERT_GE(count(s, "64"), 1) << s.dump();
  EXPECT_EQ(paths_to("node003", why), 1) << why;
  EXPECT_EQ(s["sm_traps"]["reports_not_from_sm"], 0) << s.dump();
  EXPECT_NE(s["metrics"].dump().find("sm_trap_reports_total"), std::string::npos)
      << s["metrics"].dump();
}

}  // namespace
}  // namespace rdmaqos::sad
