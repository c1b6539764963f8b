// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd serving the node's path socket without the kernel's channel, as on a node where
// ibacm owns that channel: with --no-kernel, and started by systemd with only
// rdma-qos-paths.socket's socket (LISTEN_FDS=1, an AF_UNIX SOCK_SEQPACKET socket at fd 3). It
// answers on the path socket and holds no netlink socket at all.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "rdma-qos/sa-client/path_service_client.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;

// The inodes of the netlink sockets of this network namespace.
std::set<std::string> netlink_inodes() {
  std::ifstream in("/proc/net/netlink");
  std::string line;
  std::getline(in, line);  // header
  std::set<std::string> out;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field, last;
    while (fields >> field) last = field;
    out.insert(last);
  }
  return out;
}

// How many of `pid`'s open files are netlink sockets.
int netlink_sockets_of(pid_t pid) {
  const auto netlink = netlink_inodes();
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (ec || !target.starts_with("socket:[")) continue;
    if (netlink.count(target.substr(8, target.size() - 9))) ++n;
  }
  return n;
}

class LsdPathSocket : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdma-qos-lsd-paths-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/paths.sock";
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  // Asks until the daemon answers (it may still be starting); the answer is an error here, as
  // no SA port exists, but it is the service's answer.
  Result<bool> ask() {
    sa::PathServiceOptions o;
    o.socket_path = socket_;
    o.device = "rdma_qos_no_such_ca";
    o.port = 1;
    for (auto until = std::chrono::steady_clock::now() + 5s;;) {
      auto c = sa::PathServiceClient::connect(o);
      if (c) return (*c)->qos_supported(sa::deadline_after(3s));
      if (std::chrono::steady_clock::now() > until) return c.error();
      std::this_thread::sleep_for(50ms);
    }
  }
  // SIGTERM to the daemon; its wait status (-1 when it could not be reaped).
  int stop_daemon() {
    kill(pid_, SIGTERM);
    int status = 0;
    const bool reaped = waitpid(pid_, &status, 0) == pid_;
    pid_ = -1;
    return reaped ? status : -1;
  }
  static bool exited_cleanly(int status) {
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

TEST_F(LsdPathSocket, NoKernelServesThePathSocketAndHoldsNoNetlinkSocket) {
  pid_ = fork();
  ASSERT_GE(pid_, 0);
  if (pid_ == 0) {
    setenv("RDMA_QOS_CONFIG", "/dev/null", 1);
    execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--no-kernel", "--no-control-socket",
          "--path-socket", socket_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto answer = ask();
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("rdma_qos_no_such_ca"), std::string::npos)
      << answer.error().message;
  struct stat st {};
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u) << "every local user may ask";
  EXPECT_EQ(netlink_sockets_of(pid_), 0);
  const int status = stop_daemon();
  EXPECT_TRUE(exited_cleanly(status)) << status;
  EXPECT_FALSE(std::filesystem::exists(socket_)) << "the socket it made is removed at exit";
}

TEST_F(LsdPathSocket, StartedWithOnlyThePathSocketItServesThatAndNoKernelChannel) {
  int passed = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  ASSERT_GE(passed, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_.c_str());
  ASSERT_EQ(bind(passed, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(passed, 16), 0);
  pid_ = fork();
  ASSERT_GE(pid_, 0);
  if (pid_ == 0) {
    dup2(passed, 3);
    setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_FDNAMES", "paths", 1);
    setenv("RDMA_QOS_CONFIG", "/dev/null", 1);
    execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--no-control-socket",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(passed);
  auto answer = ask();
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("rdma_qos_no_such_ca"), std::string::npos)
      << answer.error().message;
  EXPECT_EQ(netlink_sockets_of(pid_), 0);
  const int status = stop_daemon();
  EXPECT_TRUE(exited_cleanly(status)) << status;
  EXPECT_TRUE(std::filesystem::exists(socket_)) << "systemd's socket file is systemd's";
}

TEST_F(LsdPathSocket, NoKernelAndNoPathSocketIsAUsageError) {
  pid_ = fork();
  ASSERT_GE(pid_, 0);
  if (pid_ == 0) {
    setenv("RDMA_QOS_CONFIG", "/dev/null", 1);
    execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--no-kernel", "--no-path-socket",
          "--no-control-socket", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
}

}  // namespace
}  // namespace rdmaqos::kmod
