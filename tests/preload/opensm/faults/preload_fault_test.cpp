// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The preload under host faults, with a plain-verbs program at node001 of an ibsim fabric whose
// OpenSM enforces the sample policy (QoS-Class 7 selects GOLD, SL 5): a program whose file
// descriptors are all taken, a configuration and policy deleted while it runs, a read-only
// /run. The program always completes; its QPs get the level when the module can still ask, and
// the stock path otherwise, with at most one line of the module's on stderr. The stand-in
// device and provider are those of the plain-verbs tests (faults/fault_verbs_client.c,
// stub/fake_provider.c): the SA query and its answer are real, the modify_qp simulated.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace {

using namespace std::chrono_literals;
using rdmaqos::testbed::IbFabric;

class PreloadFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = rdmaqos::testbed::start_fat_tree(
        rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true}));
  }
  static void TearDownTestSuite() { fabric_.reset(); }

  struct Run {
    int exit_code = -1;
    std::string output;
    std::vector<std::string> provider;  // the stand-in provider's RTR lines
    std::vector<std::string> module;    // the module's lines
  };

  std::string path(const std::string& name) const {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return fabric_->dir() + "/" + test + "-" + name;
  }

  // The environment of the client at node001: umad2sim, the module, the stand-in provider,
  // the module's configuration file (class 7) and `extra`.
  std::vector<std::string> env(const std::vector<std::string>& extra = {}) const {
    std::ofstream(path("rdma-qos.conf")) << "class 7\nverbs_sa_wait_ms 10000\n";
    std::vector<std::string> e = {"LD_PRELOAD=" + rdmaqos::testbed::umad2sim_library() +
                                      ":" RDMA_QOS_PRELOAD_MODULE ":" RDMA_QOS_FAKE_PROVIDER,
                                  "FAKE_PORT_LID=" + fabric_->lid_arg("node001"),
                                  "RDMA_QOS_CONFIG=" + path("rdma-qos.conf")};
    e.insert(e.end(), extra.begin(), extra.end());
    return e;
  }

  static Run parse(int exit_code, const std::string& output) {
    Run out{exit_code, output, {}, {}};
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("provider: ibv_modify_qp mask 0x", 0) == 0 &&
          line.find("path_mtu 0") == std::string::npos)  // INIT carries no path MTU
        out.provider.push_back(line);
      if (line.rfind("rdma-qos[", 0) == 0) out.module.push_back(line);
    }
    return out;
  }

  // `prefix` (e.g. unshare ...) runs the client with `steps` at node001.
  Run client(const std::vector<std::string>& steps, const std::vector<std::string>& extra_env = {},
             const std::vector<std::string>& prefix = {}) const {
    std::vector<std::string> argv = prefix;
    argv.push_back("env");
    for (const auto& e : env(extra_env)) argv.push_back(e);
    argv.push_back(RDMA_QOS_FAULT_VERBS_CLIENT);
    argv.push_back(fabric_->lid_arg("node002"));
    argv.insert(argv.end(), steps.begin(), steps.end());
    auto r = fabric_->run_at("node001", argv, 60s);
    return parse(r.exit_code, r.output);
  }

  static inline std::unique_ptr<IbFabric> fabric_;
};

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

// Every descriptor taken before the first QP: the module cannot open the SA port (umad2sim's
// socket), so the QPs keep the stock path (SL 0), and it says so once.
TEST_F(PreloadFaults, NoFileDescriptorLeftLeavesTheQpsStockWithOneWarning) {
  auto r = client({"eat-fds", "rtr", "rtr", "rtr"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("none left"), std::string::npos) << r.output;
  ASSERT_EQ(r.provider.size(), 3u) << r.output;
  for (const auto& line : r.provider) EXPECT_NE(line.find(" sl 0 "), std::string::npos) << line;
  EXPECT_EQ(r.module.size(), 1u) << lines(r.module);
}

// The configuration and the policy are read at load: deleting both while the program runs
// changes nothing for it (class 7 still selects GOLD), and nothing is logged.
TEST_F(PreloadFaults, ConfigurationAndPolicyDeletedWhileRunningChangeNothing) {
  const std::string go = path("go");
  std::ofstream(path("policy.conf")) << rdmaqos::testbed::sample_policy({.sdp_ulp = false});
  std::filesystem::remove(go);
  auto before = env();  // writes the configuration file
  std::thread deleter([&] {
    std::this_thread::sleep_for(1s);  // the program is running (it waits for `go`)
    std::filesystem::remove(path("rdma-qos.conf"));
    std::filesystem::remove(path("policy.conf"));
    std::ofstream(go) << "";
  });
  auto r = client({"rtr", "wait", go, "rtr"}, {"RDMA_QOS_POLICY=" + path("policy.conf")});
  deleter.join();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 2u) << r.output;
  for (const auto& line : r.provider) EXPECT_NE(line.find(" sl 5 "), std::string::npos) << line;
  EXPECT_TRUE(r.module.empty()) << lines(r.module);
}

// The module writes nothing under /run: a read-only /run (a mount namespace of the program's
// own) changes nothing.
TEST_F(PreloadFaults, ReadOnlyRunChangesNothing) {
  const std::string script = path("ro-run.sh");
  std::ofstream(script) << "mount --bind -o ro /run /run && mount -o remount,bind,ro /run && "
                           "! touch /run/rdma-qos-fault-test 2>/dev/null && exec \"$@\"\n";
  auto r = client({"rtr", "rtr"}, {}, {"unshare", "-m", "sh", script});
  if (r.exit_code != 0 && r.provider.empty())
    GTEST_SKIP() << "cannot make /run read-only here (needs a mount namespace): " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.provider.size(), 2u) << r.output;
  for (const auto& line : r.provider) EXPECT_NE(line.find(" sl 5 "), std::string::npos) << line;
  EXPECT_TRUE(r.module.empty()) << lines(r.module);
}

}  // namespace
