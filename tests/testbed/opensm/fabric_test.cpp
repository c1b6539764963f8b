// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric fixture itself against real ibsim and OpenSM: it comes up, it is isolated from
// other fabrics, and it leaves nothing behind.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::testbed {
namespace {

using namespace std::chrono_literals;

FatTreeSpec small_tree() {
  FatTreeSpec spec;
  spec.cas = 4;
  spec.cas_per_leaf = 2;
  return spec;
}

void expect_nothing_left(const std::string& sockname, const std::string& dir) {
  EXPECT_TRUE(processes_with_env("IBSIM_SOCKNAME", sockname).empty())
      << "processes left behind for " << sockname;
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir << " left behind";
}

TEST(IbFabric, ComesUpWithTheSaAnswering) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  RunResult r = fabric.run_at("node001", {"saquery", "-c"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto records = parse_saquery_output(r.output);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].number("Capability mask"), 0x2602u);
}

// How many times a stand-in daemon was started (it appends a line to `starts` each time).
size_t starts(const std::string& dir) {
  std::ifstream in(dir + "/starts");
  return static_cast<size_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

// umad2sim's known start-up crash (here in its sanitizer form: a SEGV report whose stack runs
// through libumad2sim, then the sanitizer's exit status) earns one more start. The stand-in
// "crashes" so on its first start and "answers" (creates the file the probe looks for) on its
// second.
TEST(IbFabric, StartUntilAnsweringStartsOnceMoreAfterUmad2simsCrash) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  const std::string dir = fabric.dir();
  ProcessOptions daemon;
  daemon.argv = {
      "bash", "-c",
      "echo >> starts; if [ -e started ]; then touch answering; exec sleep 60; fi; touch started; "
      "echo '==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000030' >&2; "
      "echo '    #1 0x7f00aa3a0a1f  (/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so+0x3a1f)' "
      ">&2; echo 'SUMMARY: AddressSanitizer: SEGV' >&2; exit 1"};
  daemon.cwd = dir;
  daemon.output_path = dir + "/standin.log";
  auto started = fabric.start_until_answering(daemon, {"test", "-e", dir + "/answering"}, 20s);
  EXPECT_EQ(started.probe.exit_code, 0) << started.probe.output;
  ASSERT_TRUE(started.daemon);
  EXPECT_TRUE(started.daemon->running());
  EXPECT_EQ(starts(dir), 2u);
}

// A SIGSEGV of the daemon's own (its stack names no umad2sim) is not hidden by a second start:
// the daemon stays dead and the probe's failure reaches the test. The preloaded crash report
// shows the stack in the daemon's output.
TEST(IbFabric, StartUntilAnsweringDoesNotRestartACrashOfOurs) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  const std::string dir = fabric.dir();
  ProcessOptions daemon;
  daemon.argv = {"bash", "-c",
                 "echo >> starts; if [ -e started ]; then touch answering; exec sleep 60; fi; "
                 "touch started; kill -SEGV $$"};
  daemon.cwd = dir;
  daemon.output_path = dir + "/standin.log";
  auto started = fabric.start_until_answering(daemon, {"test", "-e", dir + "/answering"}, 20s);
  EXPECT_NE(started.probe.exit_code, 0);
  ASSERT_TRUE(started.daemon);
  EXPECT_EQ(started.daemon->wait_for(10ms), std::optional<int>(128 + SIGSEGV));
  EXPECT_EQ(starts(dir), 1u);
  std::ifstream in(daemon.output_path);
  const std::string output{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(output.find("rdma-qos testbed: fatal SIGSEGV, stack:"), std::string::npos) << output;
  EXPECT_NE(output.find("kill"), std::string::npos) << output;
}

// A daemon that fails with an exit status of its own is not started again.
TEST(IbFabric, StartUntilAnsweringDoesNotRestartAFailedDaemon) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  const std::string dir = fabric.dir();
  ProcessOptions failing;
  failing.argv = {"bash", "-c", "echo >> starts; exit 3"};
  failing.cwd = dir;
  failing.output_path = dir + "/standin.log";
  auto failed = fabric.start_until_answering(failing, {"test", "-e", dir + "/never"}, 20s);
  EXPECT_NE(failed.probe.exit_code, 0);
  EXPECT_EQ(failed.daemon->wait_for(10ms), std::optional<int>(3));
  EXPECT_EQ(starts(dir), 1u);
}

// The low 64 bits of a GID as saquery prints it (an IPv6 text address).
uint64_t gid_interface_id(const std::string& text) {
  in6_addr addr{};
  if (inet_pton(AF_INET6, text.c_str(), &addr) != 1) return 0;
  uint64_t id = 0;
  for (int i = 8; i < 16; ++i) id = (id << 8) | addr.s6_addr[i];
  return id;
}

TEST(IbFabric, LidsAndGuidsAreThoseOfTheTopology) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  const auto& topo = fabric.topology();
  const auto& src = topo.node("node001");
  for (const auto* dst : topo.cas()) {
    RunResult r = fabric.run_at(src.id, {"saquery", "-p", "--slid", std::to_string(src.lid),
                                         "--dlid", std::to_string(dst->lid)});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto records = parse_saquery_output(r.output);
    ASSERT_EQ(records.size(), 1u) << r.output;
    EXPECT_EQ(gid_interface_id(records[0].fields.at("dgid")), dst->port_guid) << dst->id;
    EXPECT_EQ(gid_interface_id(records[0].fields.at("sgid")), src.port_guid);
  }
}

TEST(IbFabric, TeardownLeavesNoProcessAndNoDirectory) {
  std::string sockname, dir;
  std::vector<pid_t> pids;
  {
    IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
    sockname = fabric.sockname();
    dir = fabric.dir();
    pids = fabric.pids();
    ASSERT_EQ(pids.size(), 2u);
    EXPECT_EQ(processes_with_env("IBSIM_SOCKNAME", sockname).size(), 2u);
  }
  expect_nothing_left(sockname, dir);
  for (pid_t pid : pids) EXPECT_NE(kill(pid, 0), 0) << "pid " << pid << " still exists";
}

TEST(IbFabric, ConcurrentFabricsDoNotShareAnything) {
  auto policy_with_default_sl = [](int sl) {
    return "qos-ulps\n  default : " + std::to_string(sl) + "\nend-qos-ulps\n";
  };
  IbFabricOptions a = fabric_options(make_fat_tree(small_tree()));
  a.policy = policy_with_default_sl(2);
  IbFabricOptions b = fabric_options(make_fat_tree(small_tree()));
  b.policy = policy_with_default_sl(5);
  IbFabric fa(a), fb(b);
  EXPECT_NE(fa.sockname(), fb.sockname());
  EXPECT_NE(fa.dir(), fb.dir());
  for (auto [fabric, sl] : {std::pair{&fa, 2}, std::pair{&fb, 5}}) {
    RunResult r = fabric->run_at("node001", {"saquery", "-p", "--slid", "2", "--dlid", "5"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto answer = path_answer(parse_saquery_output(r.output).at(0));
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->sl, sl);
  }
}

TEST(IbFabric, FailedStartThrowsWithLogsAndLeavesNothing) {
  IbFabricOptions bad = fabric_options(make_fat_tree(small_tree()));
  bad.topology.netfile = "Switch 8 \"s1\"\n[1] \"nowhere\"[1]\n";  // ibsim rejects it
  bad.start_timeout = 15s;
  try {
    IbFabric fabric(bad);
    FAIL() << "fabric started on a broken topology";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ibsim"), std::string::npos) << e.what();
  }
}

TEST(IbFabric, StopIsIdempotent) {
  IbFabric fabric(fabric_options(make_fat_tree(small_tree())));
  std::string sockname = fabric.sockname(), dir = fabric.dir();
  fabric.stop();
  fabric.stop();
  expect_nothing_left(sockname, dir);
}

}  // namespace
}  // namespace rdmaqos::testbed
