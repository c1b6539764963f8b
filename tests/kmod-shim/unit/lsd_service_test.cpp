// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd as systemd runs it: readiness on NOTIFY_SOCKET (READY=1, RELOADING=1), SIGHUP
// re-reads rdma-qos.conf without stopping, a configuration it cannot run with exits 78
// (EX_CONFIG), --version. NETLINK_USERSOCK stands in for NETLINK_RDMA.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "../sim_kernel.h"
#include "ls_bytes.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;

// A datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = ::testing::TempDir() + "lsd-notify-" + std::to_string(getpid());
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // The next message, or "" after the timeout.
  std::string receive(std::chrono::milliseconds timeout) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::string write_config(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name + "-" + std::to_string(getpid()) + ".conf";
  std::ofstream(path) << text;
  return path;
}

// `journal`: a file that plays the journal's stream: stderr goes there and JOURNAL_STREAM
// names it, so the daemon prefixes each line with its priority ("<6>...") as under systemd.
pid_t start_lsd(const std::string& config, const std::string& notify,
                const testing::SimulatedKernel& kernel, const std::string& journal = "",
                const std::string& control_socket = "") {
  const std::string kernel_port = std::to_string(kernel.port());
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RDMA_QOS_CONFIG", config.c_str(), 1);
    if (!notify.empty()) setenv("NOTIFY_SOCKET", notify.c_str(), 1);
    if (!journal.empty()) {
      int fd = open(journal.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      struct stat st {};
      if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || fstat(STDERR_FILENO, &st) != 0) _exit(126);
      setenv("JOURNAL_STREAM", fmt::format("{}:{}", st.st_dev, st.st_ino).c_str(), 1);
    }
    // No control socket unless the test reads it, and no path socket: parallel tests would
    // race for the defaults.
    if (control_socket.empty())
      execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--test-usersock-kernel",
            kernel_port.c_str(), "--ca", "rdma_qos_no_such_ca", "--no-control-socket",
            "--no-path-socket", static_cast<char*>(nullptr));
    else
      execl(RDMA_QOS_LSD, RDMA_QOS_LSD, "--foreground", "--test-usersock-kernel",
            kernel_port.c_str(), "--ca", "rdma_qos_no_such_ca", "--control-socket",
            control_socket.c_str(), "--no-path-socket", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LsdService, TellsSystemdItIsReadyAndWhatItServes) {
  testing::SimulatedKernel kernel;
  NotifySocket notify;
  std::string config = write_config("lsd-ready", "sa_timeout_ms 100\n");
  pid_t pid = start_lsd(config, notify.path(), kernel);
  std::string ready = notify.receive(5s);
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("STATUS=answering the kernel's path queries"), std::string::npos) << ready;
  EXPECT_NE(ready.find("timeout 100 ms"), std::string::npos) << ready;
  kill(pid, SIGTERM);
  EXPECT_NE(notify.receive(5s).find("STOPPING=1"), std::string::npos);
  EXPECT_EQ(wait_exit(pid), 0);
}

// `systemctl reload`: the new sa_timeout_ms shows in the kernel timeout the daemon sets again,
// and the daemon goes on answering.
TEST(LsdService, SighupRereadsTheConfigurationAndKeepsAnswering) {
  testing::SimulatedKernel kernel;
  NotifySocket notify;
  std::string config = write_config("lsd-reload", "sa_timeout_ms 100\nsa_retries 0\n");
  pid_t pid = start_lsd(config, notify.path(), kernel);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  auto first = kernel.receive(5s);
  ASSERT_TRUE(first);
  auto before = decode_set_timeout(*first);
  ASSERT_TRUE(before);

  write_config("lsd-reload", "sa_timeout_ms 900\nsa_retries 0\n");
  kill(pid, SIGHUP);
  EXPECT_NE(notify.receive(5s).find("RELOADING=1"), std::string::npos);
  std::string ready = notify.receive(5s);
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("timeout 900 ms"), std::string::npos) << ready;
  auto again = kernel.receive(5s);
  ASSERT_TRUE(again) << "no SET_TIMEOUT after the reload";
  auto after = decode_set_timeout(*again);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after - *before, 800u);

  const std::vector<uint8_t> gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0xa0, 0, 0x11};
  kernel.send_to(kernel.last_sender(),
                 testing::RequestBytes(7, "mlx5_0", 1, 0).gid(4, gid).gid(5, gid).bytes());
  auto reply = kernel.receive(5s);
  ASSERT_TRUE(reply) << "no answer after the reload";
  auto decoded = decode_resolve_reply(*reply);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->header.seq, 7u);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0);
}

// A reload with a bad file keeps the previous configuration instead of stopping.
TEST(LsdService, BadConfigurationOnReloadKeepsThePreviousOne) {
  testing::SimulatedKernel kernel;
  NotifySocket notify;
  std::string config = write_config("lsd-badreload", "sa_timeout_ms 100\n");
  pid_t pid = start_lsd(config, notify.path(), kernel);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  write_config("lsd-badreload", "log_level loud\n");
  kill(pid, SIGHUP);
  EXPECT_NE(notify.receive(5s).find("RELOADING=1"), std::string::npos);
  std::string ready = notify.receive(5s);
  EXPECT_NE(ready.find("timeout 100 ms"), std::string::npos) << ready;
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A reload is routine: info, shown at log_level info. Its failure is an error, because the
// file on disk is then not what runs.
TEST(LsdService, ReloadIsLoggedAtInfoAndAFailedReloadAtError) {
  testing::SimulatedKernel kernel;
  NotifySocket notify;
  std::string config = write_config("lsd-reloadlog", "sa_timeout_ms 100\nlog_level info\n");
  std::string journal = ::testing::TempDir() + "lsd-journal-" + std::to_string(getpid());
  pid_t pid = start_lsd(config, notify.path(), kernel, journal);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  kill(pid, SIGHUP);
  ASSERT_NE(notify.receive(5s).find("RELOADING=1"), std::string::npos);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  write_config("lsd-reloadlog", "log_level loud\n");
  kill(pid, SIGHUP);
  ASSERT_NE(notify.receive(5s).find("RELOADING=1"), std::string::npos);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0);
  std::string text = read_all(journal);
  EXPECT_NE(text.find("<6>configuration reloaded\n"), std::string::npos) << text;
  EXPECT_NE(text.find("<3>configuration reload failed"), std::string::npos) << text;
  unlink(journal.c_str());
}

// `rdma-qos kernel stats` on a live daemon: the request and its F_ERR (no SA port here) are
// counted, a reload too, and the Prometheus text passes promtool.
TEST(LsdService, StatsCountRequestsAnswersAndLatency) {
  testing::SimulatedKernel kernel;
  NotifySocket notify;
  std::string config = write_config("lsd-stats", "sa_timeout_ms 100\nsa_retries 0\n");
  std::string socket = ::testing::TempDir() + "lsd-stats-" + std::to_string(getpid()) + ".sock";
  pid_t pid = start_lsd(config, notify.path(), kernel, "", socket);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);
  ASSERT_TRUE(kernel.receive(5s));  // SET_TIMEOUT
  const std::vector<uint8_t> gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0xa0, 0, 0x11};
  kernel.send_to(kernel.last_sender(),
                 testing::RequestBytes(5, "mlx5_0", 1, 2).gid(4, gid).gid(5, gid).bytes());
  ASSERT_TRUE(kernel.receive(5s)) << "no F_ERR";
  kill(pid, SIGHUP);
  ASSERT_NE(notify.receive(5s).find("RELOADING=1"), std::string::npos);
  ASSERT_NE(notify.receive(5s).find("READY=1"), std::string::npos);

  auto reply = sad::control_call(socket, {{"command", "stats"}}, 5s);
  ASSERT_TRUE(reply) << reply.error().message;
  ASSERT_EQ((*reply)["ok"], true) << reply->dump();
  const nlohmann::json& s = (*reply)["stats"];
  EXPECT_EQ(s["requests"]["gmp"], 1) << s.dump();
  EXPECT_EQ(s["answers"]["f_err"]["sa_error"], 1) << s.dump();
  EXPECT_EQ(s["latency"]["count"], 1) << s.dump();
  EXPECT_EQ(s["reloads"]["ok"], 1) << s.dump();
  auto refused = sad::control_call(socket, {{"command", "reload"}}, 5s);
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["ok"], false);

  const std::string cli = std::string(RDMA_QOS_CLI) + " kernel stats --socket " + socket;
  EXPECT_EQ(std::system((cli + " > /dev/null").c_str()), 0);
  if (std::system("command -v promtool >/dev/null") == 0) {
    EXPECT_EQ(std::system((cli + " --format prometheus | promtool check metrics").c_str()), 0);
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0);
  EXPECT_NE(access(socket.c_str(), F_OK), 0) << "the socket outlived the daemon";
}

TEST(LsdService, ConfigurationErrorExitsWithExConfig) {
  testing::SimulatedKernel kernel;
  std::string config = write_config("lsd-bad", "sa_lid 0xffff\n");
  EXPECT_EQ(wait_exit(start_lsd(config, "", kernel)), 78);
}

TEST(LsdService, VersionPrintsTheVersion) {
  FILE* p = popen(RDMA_QOS_LSD " --version", "r");
  ASSERT_NE(p, nullptr);
  char buf[128] = {};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(std::string(buf, n).rfind("rdma-qos-lsd ", 0), 0u) << buf;
}

}  // namespace
}  // namespace rdmaqos::kmod
