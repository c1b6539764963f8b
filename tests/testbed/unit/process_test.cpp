// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Child process handling: output capture, exit codes, time-outs, group kill, nothing left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "rdma-qos/testbed/process.h"

namespace rdmaqos::testbed {
namespace {

using namespace std::chrono_literals;

TEST(Process, RunCapturesOutputAndExitCode) {
  RunResult r = run({{"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, "", ""}, 5s);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
}

TEST(Process, RunPassesEnvironmentAndDirectory) {
  RunResult r = run({{"sh", "-c", "echo $RDMAQOS_T; pwd"}, {{"RDMAQOS_T", "v1"}}, "/", ""}, 5s);
  EXPECT_EQ(r.output, "v1\n/\n");
}

TEST(Process, RunKillsAtTimeoutWithDescendants) {
  std::string tag = "rdmaqos-timeout-" + std::to_string(getpid());
  RunResult r = run({{"sh", "-c", "sleep 30 & sleep 30"}, {{"RDMAQOS_TAG", tag}}, "", ""}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(processes_with_env("RDMAQOS_TAG", tag).empty());
}

TEST(Process, MissingProgramExits127) {
  RunResult r = run({{"/nonexistent/program"}, {}, "", ""}, 5s);
  EXPECT_EQ(r.exit_code, 127);
}

TEST(Process, StopKillsTheWholeGroup) {
  std::string tag = "rdmaqos-stop-" + std::to_string(getpid());
  {
    Process p =
        Process::spawn({{"sh", "-c", "sleep 30 & sleep 30"}, {{"RDMAQOS_TAG", tag}}, "", ""});
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(p.running());
    EXPECT_FALSE(processes_with_env("RDMAQOS_TAG", tag).empty());
    p.stop(200ms);
    EXPECT_FALSE(p.running());
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(processes_with_env("RDMAQOS_TAG", tag).empty());
}

TEST(Process, StopEscalatesToSigkill) {
  Process p = Process::spawn({{"sh", "-c", "trap '' TERM; sleep 30"}, {}, "", ""});
  std::this_thread::sleep_for(100ms);
  auto start = std::chrono::steady_clock::now();
  p.stop(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_FALSE(p.running());
}

TEST(Process, ChildDiesWithItsParent) {
  // A grandchild spawned by a process that is then killed must not survive: the fixture's
  // guarantee when a test crashes.
  std::string tag = "rdmaqos-orphan-" + std::to_string(getpid());
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    Process p = Process::spawn({{"sleep", "30"}, {{"RDMAQOS_TAG", tag}}, "", ""});
    pause();
    _exit(0);
  }
  std::this_thread::sleep_for(300ms);
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(processes_with_env("RDMAQOS_TAG", tag).empty());
}

TEST(Process, FindProgramSearchesPathAndSbin) {
  EXPECT_FALSE(find_program("sh").empty());
  EXPECT_TRUE(find_program("rdmaqos-no-such-program").empty());
}

}  // namespace
}  // namespace rdmaqos::testbed
