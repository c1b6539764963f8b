// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd started the way systemd starts it from rdma-qos-lsd.socket: the netlink socket
// arrives as fd 3 with LISTEN_FDS=1 and LISTEN_PID set to the daemon's pid, and the daemon
// serves on that socket rather than opening its own. NETLINK_USERSOCK stands in for
// NETLINK_RDMA.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "../sim_kernel.h"
#include "ls_bytes.h"
#include "rdma-qos/kmod-shim/ls_codec.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;

TEST(SocketActivation, DaemonServesOnTheSocketPassedAsFd3) {
  testing::SimulatedKernel kernel;
  int passed = socket(AF_NETLINK, SOCK_RAW, NETLINK_USERSOCK);
  ASSERT_GE(passed, 0);
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  ASSERT_EQ(bind(passed, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(passed, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string kernel_port = std::to_string(kernel.port());

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(passed, 3);
    setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
    setenv("LISTEN_FDS", "1", 1);
    setenv("RDMA_QOS_CONFIG", "/dev/null", 1);
    execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--test-usersock-kernel", kernel_port.c_str(),
          "--ca", "rdma_qos_no_such_ca", "--no-control-socket", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(passed);
  auto first = kernel.receive(5s);
  ASSERT_TRUE(first) << "no SET_TIMEOUT";
  EXPECT_TRUE(decode_set_timeout(*first));
  EXPECT_EQ(kernel.last_sender(), a.nl_pid) << "the daemon did not use the passed socket";

  const std::vector<uint8_t> gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0xa0, 0, 0x11};
  kernel.send_to(a.nl_pid,
                 testing::RequestBytes(42, "mlx5_0", 1, 0).gid(4, gid).gid(5, gid).bytes());
  auto reply = kernel.receive(5s);
  ASSERT_TRUE(reply);
  auto decoded = decode_resolve_reply(*reply);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->header.seq, 42u);
  EXPECT_TRUE(decoded->error);  // no SA port here

  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace rdmaqos::kmod
