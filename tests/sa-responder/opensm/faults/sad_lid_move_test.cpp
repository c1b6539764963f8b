// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SM's LID and rdma-qos-sad's own LID moving while the daemon runs, on ibsim: OpenSM comes
// back with a LID database that moves the SM's node, the daemon's port and one CA, so every
// port's SM LID changes too. The daemon (at node008, the deployment beside the SM) must notice
// through its port's LIDs, re-discover, and answer at its new LID with the new LIDs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;
using testbed::RunResult;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// OpenSM's policy gives iSER SL 5, ours SL 3: the SL tells which SA answered.
const std::string kOurPolicy = testbed::sample_policy({.gold = false, .sdp_ulp = false});
std::string opensm_policy() {
  std::string p = kOurPolicy;
  p.replace(p.find("sl: 3"), 5, "sl: 5");
  return p;
}

class SadLidMove : public ::testing::Test {
 protected:
  void TearDown() override {
    if (sad_) sad_->stop();
    if (HasFailure() && fabric_) std::cerr << "rdma-qos-sad log:\n" << slurp(log_path());
  }

  std::string log_path() const { return fabric_->dir() + "/sad.log"; }

  // `rdma-qos path --json` from node001 to `dlid` for iSER, asking `sa_lid` (0: the port's SM
  // LID); the SL of the one record, or -1 (the output in `why`).
  int iser_sl(uint16_t dlid, uint16_t sa_lid, std::string& why) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI,         "path",  "--json",       "--dlid",
              std::to_string(dlid), "--get", "--service-id", "0x1060CBC"};
    if (sa_lid != 0) p.argv.insert(p.argv.end(), {"--sa-lid", std::to_string(sa_lid)});
    p.env = fabric_->client_env("node001");
    p.cwd = fabric_->dir();
    RunResult r = testbed::run(p, 20s);
    why = r.output;
    EXPECT_FALSE(r.timed_out) << "rdma-qos path hung past its deadline";
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '{') continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("paths") || j["paths"].size() != 1) return -1;
      return j["paths"][0]["sl"].get<int>();
    }
    return -1;
  }

  nlohmann::json stats() const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", "stats", "--socket", fabric_->dir() + "/sad.sock", "--json"};
    RunResult r = testbed::run(p, 30s);
    return nlohmann::json::parse(r.output, nullptr, false);
  }

  std::unique_ptr<testbed::IbFabric> fabric_;
  std::unique_ptr<testbed::Process> sad_;
};

TEST_F(SadLidMove, TheDaemonFollowsItsPortAndTheSmToNewLids) {
  auto o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.policy = opensm_policy();
  // Our daemon holds issm at node008, so OpenSM coming back finds another SM port and asks it
  // for SMInfo, which the daemon never answers; umad2sim never times a MAD out, so OpenSM would
  // wait for ever in DISCOVERING. On hardware the kernel's MAD timeout ends that wait.
  o.opensm_conf = "ignore_other_sm TRUE\n";
  fabric_ = std::make_unique<testbed::IbFabric>(o);
  const std::string policy = fabric_->dir() + "/sad-policy.conf";
  std::ofstream(policy) << kOurPolicy;
  const std::string node = "node008";
  const uint16_t sm_before = fabric_->lid("sm01");
  const uint16_t ours_before = fabric_->lid(node);
  const uint16_t peer_before = fabric_->lid("node002");

  // Re-discovery on (the default period), so the daemon reads its port's LIDs every 2 s.
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_SAD,  "--policy", policy, "--control-socket", fabric_->dir() + "/sad.sock",
            "--foreground"};
  p.env = fabric_->client_env(node);
  p.cwd = fabric_->dir();
  p.output_path = log_path();
  auto started = fabric_->start_until_answering(
      p, {RDMA_QOS_CLI, "path", "cpi", "--sa-lid", std::to_string(ours_before)});
  sad_ = std::move(started.daemon);
  ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
  std::string why;
  ASSERT_EQ(iser_sl(peer_before, ours_before, why), 3) << why;

  // OpenSM back with the SM's node, our port and node002 at new LIDs.
  const uint16_t sm_after = 0x40, ours_after = 0x48, peer_after = 0x42;
  fabric_->renumber({{"sm01", sm_after}, {node, ours_after}, {"node002", peer_after}});
  ASSERT_EQ(fabric_->lid("node002"), peer_after);
  // A client reading its port afresh asks the SM at its new LID (OpenSM's SL).
  EXPECT_EQ(iser_sl(peer_after, 0, why), 5) << why;
  // Our model still names node002 at its old LID.
  EXPECT_EQ(iser_sl(peer_after, ours_after, why), -1) << why;

  // The kernel updates a port's sysfs files when the SM sets its PortInfo; umad2sim writes the
  // daemon's copy once, at start, so the test writes it as the kernel would.
  const std::string port_dir = fabric_->dir() + "/sys-" + std::to_string(sad_->pid()) +
                               "/sys/class/infiniband/ibsim0/ports/1/";
  std::ofstream(port_dir + "lid") << "0x" << std::hex << ours_after << "\n";
  std::ofstream(port_dir + "sm_lid") << "0x" << std::hex << sm_after << "\n";

  // Two readings 2 s apart, then an incremental re-discovery.
  nlohmann::json s;
  for (int i = 0; i < 100; ++i) {
    s = stats();
    if (s.is_object() && s["sa"]["lid"] == ours_after && s["fabric"]["discoveries"] == 2 &&
        s["fabric"]["discovering"] == false)
      break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["sa"]["lid"], ours_after) << s.dump();
  EXPECT_EQ(s["sa"]["sm_lid"], sm_after) << s.dump();
  EXPECT_EQ(s["fabric"]["discoveries"], 2) << s.dump();
  EXPECT_EQ(s["fabric"]["discovery_failures"], 0) << s.dump();
  const std::string log = slurp(log_path());
  EXPECT_NE(log.find(fmt::format("the port's LID moved from {} to {}, its SM's from {} to {}: "
                                 "re-discovering",
                                 ours_before, ours_after, sm_before, sm_after)),
            std::string::npos)
      << log;

  // Answered at our new LID, with the new LIDs.
  EXPECT_EQ(iser_sl(peer_after, ours_after, why), 3) << why;
  EXPECT_EQ(iser_sl(peer_before, ours_after, why), -1) << "a LID nobody has now: " << why;
  EXPECT_TRUE(sad_->running());
}

}  // namespace
}  // namespace rdmaqos::sad
