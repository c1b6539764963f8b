// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A stand-in for the node's path service (rdma-qos-lsd's side of path_service_wire.h) for the
// client's tests: listens on a socket of its own, decodes each question and sends what the
// test's handler answers (nothing, for a silent service). One thread, all connections polled.
// FullBacklog stands for a service too slow to take its askers.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rdma-qos/sa-client/path_service_wire.h"

namespace rdmaqos::sa::testing {

class FakePathService {
 public:
  // nullopt: leave the question unanswered.
  using Handler = std::function<std::optional<path_service::Answer>(const path_service::Question&)>;

  FakePathService(std::string path, Handler handler)
      : path_(std::move(path)), handler_(std::move(handler)) {
    ::unlink(path_.c_str());
    listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 64) != 0)
      throw std::runtime_error("cannot listen at " + path_);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakePathService() { stop(); }

  // Closes every connection and the socket, and removes its file: the service is gone.
  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    thread_.join();
    for (int fd : connections_) ::close(fd);
    connections_.clear();
    ::close(listener_);
    ::unlink(path_.c_str());
  }

  int questions() const { return questions_; }
  const std::string& path() const { return path_; }

 private:
  void serve() {
    std::vector<uint8_t> buffer(4096);
    while (!stopping_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (int fd : connections_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) connections_.push_back(fd);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        ssize_t n = ::recv(fds[i].fd, buffer.data(), buffer.size(), 0);
        if (n <= 0) {
          ::close(fds[i].fd);
          std::erase(connections_, fds[i].fd);
          continue;
        }
        ++questions_;
        auto q = path_service::decode_question({buffer.data(), static_cast<size_t>(n)});
        if (!q) continue;
        if (auto a = handler_(*q)) {
          auto bytes = path_service::encode_answer(*a);
          if (bytes) ::send(fds[i].fd, bytes->data(), bytes->size(), MSG_NOSIGNAL);
        }
      }
    }
  }

  std::string path_;
  Handler handler_;
  int listener_ = -1;
  std::vector<int> connections_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> questions_{0};
  std::thread thread_;
};

// A listener whose backlog holds one connection and that accepts only when told: a service
// whose askers come faster than it takes them.
class FullBacklog {
 public:
  explicit FullBacklog(std::string path) : path_(std::move(path)) {
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 0) != 0)
      throw std::runtime_error("cannot listen at " + path_);
  }
  ~FullBacklog() {
    for (int fd : accepted_) ::close(fd);
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  void accept_one() { accepted_.push_back(::accept(fd_, nullptr, nullptr)); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<int> accepted_;
};

}  // namespace rdmaqos::sa::testing
