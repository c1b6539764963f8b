// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service, asked over its local SOCK_SEQPACKET socket (path_service_client.h).
// One question in flight per connection: the answer is the next message, so no demultiplexing;
// a connection that timed out is closed rather than reused, since its late answer would be read
// as the next question's.
#include "rdma-qos/sa-client/path_service_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "rdma-qos/common/unix_address.h"

namespace rdmaqos::sa {
namespace {

using Clock = std::chrono::steady_clock;
using path_service::Op;

Error transport(const std::string& what, int error) {
  return make_error(ErrorCode::kTransport,
                    fmt::format("node path service: {}: {}", what, std::strerror(error)));
}

int millis_until(Clock::time_point until) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60000));
}

}  // namespace

Result<int> connect_path_service(const std::string& socket_path,
                                 std::optional<Clock::time_point> wait_until) {
  const std::optional<sockaddr_un> address = unix_address(socket_path);
  if (!address)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("node path service socket '{}': not a socket path", socket_path));
  const sockaddr_un& addr = *address;
  // A full backlog (EAGAIN) means the service is there and accepting more slowly than a job's
  // ranks connect: waited for in short sleeps, up to the caller's deadline. Non-blocking, so the
  // wait is ours and bounded (a blocking connect would wait without a bound).
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return transport("socket", errno);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    int e = errno;
    ::close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
      return make_error(ErrorCode::kNotFound, fmt::format("no node path service at {} ({})",
                                                          socket_path, std::strerror(e)));
    if (e != EAGAIN) return transport(fmt::format("connect {}", socket_path), e);
    const auto now = Clock::now();
    if (!wait_until || now >= *wait_until)
      return make_error(
          ErrorCode::kBusy,
          fmt::format("node path service at {} is busy (its backlog is full)", socket_path));
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, *wait_until - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(16));
  }
}

Result<std::unique_ptr<PathServiceClient>> PathServiceClient::connect(
    PathServiceOptions options, std::optional<Clock::time_point> wait_until) {
  if (options.device.empty() || options.port < 1 || options.port > 254)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("node path service: no port '{}' {}",
                                                               options.device, options.port));
  auto fd = connect_path_service(options.socket_path, wait_until);
  if (!fd) return fd.error();
  return std::unique_ptr<PathServiceClient>(new PathServiceClient(std::move(options), *fd));
}

PathServiceClient::PathServiceClient(PathServiceOptions options, int first_connection)
    : options_(std::move(options)), opened_(1) {
  options_.connections = std::max<size_t>(options_.connections, 1);
  idle_.push_back(first_connection);
}

PathServiceClient::~PathServiceClient() {
  for (int fd : idle_) ::close(fd);
}

Result<int> PathServiceClient::borrow(Clock::time_point until) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      int fd = idle_.back();
      idle_.pop_back();
      return fd;
    }
    if (opened_ < options_.connections) {
      ++opened_;
      lock.unlock();
      auto fd = connect_path_service(options_.socket_path, until);
      if (!fd) {
        lock.lock();
        --opened_;
        returned_.notify_one();
      }
      return fd;
    }
    if (returned_.wait_until(lock, until) == std::cv_status::timeout && idle_.empty() &&
        opened_ >= options_.connections)
      return make_error(ErrorCode::kBusy,
                        "node path service: every connection stayed busy until the deadline");
  }
}

void PathServiceClient::give_back(int fd, bool reusable) {
  std::lock_guard lock(mutex_);
  if (reusable) {
    idle_.push_back(fd);
  } else {
    ::close(fd);
    --opened_;
  }
  returned_.notify_one();
}

Result<path_service::Answer> PathServiceClient::ask(Op op, const PathQuery* query,
                                                    Deadline deadline) {
  const Clock::time_point until = deadline ? *deadline : Clock::now() + options_.no_deadline_wait;
  path_service::Question q;
  q.op = op;
  q.device = options_.device;
  q.port = static_cast<uint8_t>(options_.port);
  q.budget_ms = static_cast<uint32_t>(std::max(1, millis_until(until)));
  if (query != nullptr) q.query = *query;
  {
    std::lock_guard lock(mutex_);
    q.id = next_id_++;
  }
  auto bytes = path_service::encode_question(q);
  if (!bytes) return bytes.error();
  auto fd = borrow(until);
  if (!fd) return fd.error();
  if (::send(*fd, bytes->data(), bytes->size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(bytes->size())) {
    int e = errno;
    give_back(*fd, false);
    // The service went away since the connection was made: the caller asks the SA itself.
    if (e == EPIPE || e == ECONNRESET || e == ECONNREFUSED || e == ENOTCONN)
      return make_error(ErrorCode::kNotFound, fmt::format("node path service at {} stopped ({})",
                                                          options_.socket_path, std::strerror(e)));
    return transport("send", e);
  }
  std::vector<uint8_t> buffer(path_service::kAnswerMax);
  for (;;) {
    pollfd p{*fd, POLLIN, 0};
    int ready = ::poll(&p, 1, millis_until(until));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      give_back(*fd, false);
      return make_error(ErrorCode::kTimeout,
                        "node path service: no answer within the caller's deadline");
    }
    ssize_t n = ::recv(*fd, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      give_back(*fd, false);
      return make_error(
          ErrorCode::kNotFound,
          fmt::format("node path service at {} closed the connection", options_.socket_path));
    }
    if (static_cast<size_t>(n) > buffer.size()) {
      give_back(*fd, false);
      return make_error(ErrorCode::kMalformed,
                        fmt::format("node path service: an answer of {} bytes", n));
    }
    auto answer = path_service::decode_answer({buffer.data(), static_cast<size_t>(n)});
    if (!answer || answer->id != q.id || answer->op != op) {
      give_back(*fd, false);
      if (!answer) return answer.error();
      answer->paths.ignore_error();
      answer->class_port_info.ignore_error();
      return make_error(
          ErrorCode::kMalformed,
          fmt::format("node path service: answer {} to question {}", answer->id, q.id));
    }
    give_back(*fd, true);
    return answer;
  }
}

Result<bool> PathServiceClient::qos_supported(Deadline deadline) {
  auto a = ask(Op::kClassPortInfo, nullptr, deadline);
  if (!a) return a.error();
  if (!a->class_port_info) return a->class_port_info.error();
  return a->class_port_info->qos_supported();
}

Result<bool> PathServiceClient::multipath_supported(Deadline deadline) {
  auto a = ask(Op::kClassPortInfo, nullptr, deadline);
  if (!a) return a.error();
  if (!a->class_port_info) return a->class_port_info.error();
  return a->class_port_info->multipath_supported();
}

Result<std::vector<PathRecord>> PathServiceClient::path_records(const PathQuery& query,
                                                                Deadline deadline) {
  auto a = ask(Op::kPathRecord, &query, deadline);
  if (!a) return a.error();
  return std::move(a->paths);
}

Result<std::vector<PathRecord>> PathServiceClient::multipath_records(const PathQuery& query,
                                                                     Deadline deadline) {
  auto a = ask(Op::kMultiPathRecord, &query, deadline);
  if (!a) return a.error();
  return std::move(a->paths);
}

}  // namespace rdmaqos::sa
