// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd killed while the kernel waits for its answer, on ibsim with a simulated kernel
// (sim_kernel.h): the InfiniBand kernel path (ib_sa asking over RDMA netlink) cannot run here,
// so what is shown is the daemon's side. A request in flight when the daemon dies gets no reply
// at all, so the kernel's own timeout for it (the one the daemon announced) is what ends it; on
// a real kernel ib_sa then sends the query itself. A new daemon announces its timeout again and
// answers the next request with the policy's SL. And ibsim restarted under a running daemon.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "../../sim_kernel.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testing::SimulatedKernel;

constexpr uint64_t kIserServiceId = 0x1060CBC;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LsdFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_ = testbed::start_fat_tree(testbed::sample_policy({.sdp_ulp = false}));
  }

  // rdma-qos-lsd at node001 playing `kernel_`; returns its netlink port once its SET_TIMEOUT
  // arrived, with the timeout it announced.
  std::pair<uint32_t, std::chrono::milliseconds> start(const std::string& name) {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_LSD,
              "--foreground",
              "--no-control-socket",
              "--no-path-socket",
              "--test-usersock-kernel",
              std::to_string(kernel_.port()),
              "--sa-timeout-ms",
              "300",
              "--sa-retries",
              "1"};
    p.env = fabric_->client_env("node001");
    p.cwd = fabric_->dir();
    p.output_path = fabric_->dir() + "/" + name + ".log";
    daemon_ = std::make_unique<testbed::Process>(testbed::Process::spawn(p));
    auto first = kernel_.receive(10s);
    EXPECT_TRUE(first) << "no SET_TIMEOUT from rdma-qos-lsd:\n" << slurp(p.output_path);
    if (!first) return {0, 0ms};
    auto timeout = decode_set_timeout(*first);
    EXPECT_TRUE(timeout);
    return {kernel_.last_sender(), std::chrono::milliseconds(timeout ? *timeout : 0)};
  }

  void send(uint32_t port, uint32_t seq) {
    ResolveRequest r;
    r.seq = seq;
    r.device = "ibsim0";
    r.port_num = 1;
    r.path_use = PathUse::kUnidirectional;
    r.sgid = sa::make_gid(0xfe80000000000000ULL, fabric_->port_guid("node001"));
    r.dgid = sa::make_gid(0xfe80000000000000ULL, fabric_->port_guid("node002"));
    r.pkey = 0xffff;
    r.service_id = kIserServiceId;
    kernel_.send_to(port, encode_resolve_request(r));
  }

  std::unique_ptr<testbed::IbFabric> fabric_;
  SimulatedKernel kernel_;
  std::unique_ptr<testbed::Process> daemon_;
};

TEST_F(LsdFaults, KilledWhileTheKernelWaitsAnswersNothingAndANewDaemonServes) {
  auto [port, kernel_timeout] = start("lsd-1");
  ASSERT_GT(kernel_timeout, 0ms);
  // The SA frozen, so that the request is still inside the daemon when it dies.
  const pid_t sm = testbed::process_named(fabric_->pids(), "opensm");
  ASSERT_GT(sm, 0);
  struct Thaw {
    pid_t pid;
    ~Thaw() { kill(pid, SIGCONT); }
  } thaw{sm};
  ASSERT_EQ(kill(sm, SIGSTOP), 0);
  ASSERT_TRUE(testbed::wait_stopped(sm, 5s));
  send(port, 51);
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(kill(daemon_->pid(), SIGKILL), 0);
  ASSERT_TRUE(daemon_->wait_for(5s).has_value());
  // Nothing arrives: the kernel's timeout ends the request (on a real kernel ib_sa falls back
  // to its own query then).
  EXPECT_FALSE(kernel_.receive(kernel_timeout)) << "a reply after the daemon was killed";

  ASSERT_EQ(kill(sm, SIGCONT), 0);
  auto [new_port, new_timeout] = start("lsd-2");
  EXPECT_EQ(new_timeout, kernel_timeout);
  send(new_port, 52);
  auto bytes = kernel_.receive(new_timeout);
  ASSERT_TRUE(bytes) << "no reply from the new daemon:\n" << slurp(fabric_->dir() + "/lsd-2.log");
  auto reply = decode_resolve_reply(*bytes);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->header.seq, 52u);
  ASSERT_FALSE(reply->error) << slurp(fabric_->dir() + "/lsd-2.log");
  ASSERT_FALSE(reply->paths.empty());
  EXPECT_EQ(reply->paths.at(0).record.sl, 3) << "the sample policy's iSER level";
  daemon_->stop();
}

// ibsim killed and started again on the same topology: the daemon's SA client is cut off for
// good (umad2sim connects once, at start), and it cannot tell that from an SA that does not
// answer. What the kernel needs from it is a reply within the announced timeout, so that ib_sa
// queries itself at once: an error reply, while ibsim is down and after it is back, and no
// spinning meanwhile. A stop ends it cleanly, and a daemon started again answers with the
// policy's SL.
TEST_F(LsdFaults, IbsimRestartedGetsErrorRepliesUntilTheDaemonIsStartedAgain) {
  auto [port, kernel_timeout] = start("lsd-1");
  ASSERT_GT(kernel_timeout, 0ms);
  send(port, 61);
  auto before = kernel_.receive(kernel_timeout);
  ASSERT_TRUE(before);
  auto answered = decode_resolve_reply(*before);
  ASSERT_TRUE(answered && !answered->error) << slurp(fabric_->dir() + "/lsd-1.log");

  fabric_->stop_ibsim();
  const auto cpu_before = testbed::cpu_time(daemon_->pid());
  send(port, 62);
  auto down = kernel_.receive(kernel_timeout);
  ASSERT_TRUE(down) << "no reply within the kernel's timeout while ibsim is down";
  auto failed = decode_resolve_reply(*down);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->header.seq, 62u);
  EXPECT_TRUE(failed->error) << "a path while ibsim is down";
  std::this_thread::sleep_for(2s);
  EXPECT_LT(testbed::cpu_time(daemon_->pid()) - cpu_before, 300ms)
      << "the daemon spins without ibsim";
  ASSERT_TRUE(daemon_->running()) << slurp(fabric_->dir() + "/lsd-1.log");

  fabric_->restart_ibsim();
  send(port, 63);
  auto after = kernel_.receive(kernel_timeout);
  ASSERT_TRUE(after) << "no reply within the kernel's timeout after the restart";
  auto cut_off = decode_resolve_reply(*after);
  ASSERT_TRUE(cut_off);
  EXPECT_EQ(cut_off->header.seq, 63u);
  EXPECT_TRUE(cut_off->error) << "the old daemon is on the old simulator";
  ASSERT_EQ(kill(daemon_->pid(), SIGTERM), 0);
  EXPECT_EQ(daemon_->wait_for(5s), 0) << "the daemon did not stop cleanly";

  auto [new_port, new_timeout] = start("lsd-2");
  send(new_port, 64);
  auto bytes = kernel_.receive(new_timeout);
  ASSERT_TRUE(bytes) << "no reply from the new daemon:\n" << slurp(fabric_->dir() + "/lsd-2.log");
  auto reply = decode_resolve_reply(*bytes);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->header.seq, 64u);
  ASSERT_FALSE(reply->error) << slurp(fabric_->dir() + "/lsd-2.log");
  ASSERT_FALSE(reply->paths.empty());
  EXPECT_EQ(reply->paths.at(0).record.sl, 3) << "the sample policy's iSER level";
  daemon_->stop();
}

}  // namespace
}  // namespace rdmaqos::kmod
