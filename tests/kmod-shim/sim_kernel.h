// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A stand-in for the kernel's side of the local-service channel, over NETLINK_USERSOCK: it
// receives what rdma-qos-lsd sends (SET_TIMEOUT, replies) and sends it RESOLVE requests. Plain
// socket calls, independent of the code under test.
#pragma once

#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

namespace rdmaqos::kmod::testing {

class SimulatedKernel {
 public:
  SimulatedKernel() {
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_USERSOCK);
    if (fd_ < 0) throw std::runtime_error("socket(NETLINK_USERSOCK) failed");
    sockaddr_nl a{};
    a.nl_family = AF_NETLINK;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("bind failed");
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = a.nl_pid;
  }
  ~SimulatedKernel() { close(fd_); }
  SimulatedKernel(const SimulatedKernel&) = delete;
  SimulatedKernel& operator=(const SimulatedKernel&) = delete;

  uint32_t port() const { return port_; }
  // The netlink port of the last message received (the daemon's socket).
  uint32_t last_sender() const { return last_sender_; }

  // One datagram, or nullopt after `timeout`.
  std::optional<std::vector<uint8_t>> receive(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    std::vector<uint8_t> buf(65536);
    sockaddr_nl from{};
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return std::nullopt;
    buf.resize(static_cast<size_t>(n));
    last_sender_ = from.nl_pid;
    return buf;
  }

  void send_to(uint32_t port, const std::vector<uint8_t>& bytes) {
    sockaddr_nl to{};
    to.nl_family = AF_NETLINK;
    to.nl_pid = port;
    if (sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
      throw std::runtime_error(std::string("sendto: ") + std::strerror(errno));
  }

 private:
  int fd_ = -1;
  uint32_t port_ = 0;
  uint32_t last_sender_ = 0;
};

}  // namespace rdmaqos::kmod::testing
