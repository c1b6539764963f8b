// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Unix-socket control channel of rdma-qos-sad: one JSON line each way per connection.
#include "rdma-qos/sa-responder/control.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "rdma-qos/common/number.h"
#include "rdma-qos/common/unix_address.h"

namespace rdmaqos::sad {
namespace {

constexpr size_t kMaxRequest = 64 * 1024;
constexpr size_t kMaxConnections = 16;

rdmaqos::Error sys_error(const std::string& what, int err) {
  return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                             fmt::format("{}: {}", what, std::strerror(err)));
}

int connect_to(const sockaddr_un& addr) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string control_socket_path(std::string_view ca, int port) {
  return fmt::format("{}/sad-{}-{}.sock", kControlDir, ca, port);
}

std::vector<std::string> find_control_sockets(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("sad-", 0) == 0 && name.size() > 9 && name.ends_with(".sock")) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

rdmaqos::Result<nlohmann::json> control_call(const std::string& socket_path,
                                             const nlohmann::json& request,
                                             std::chrono::milliseconds timeout) {
  auto addr = rdmaqos::unix_address(socket_path);
  if (!addr) {
    return rdmaqos::make_error(
        rdmaqos::ErrorCode::kInvalidArgument,
        fmt::format("not a socket path (empty, or too long): '{}'", socket_path));
  }
  int fd = connect_to(*addr);
  if (fd < 0) return sys_error(fmt::format("cannot connect to {}", socket_path), -fd);
  auto closer = std::unique_ptr<int, void (*)(int*)>(&fd, [](int* f) { ::close(*f); });
  if (!send_all(fd, request.dump() + "\n")) {
    return sys_error(fmt::format("cannot send to {}", socket_path), errno);
  }
  std::string reply;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (reply.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return rdmaqos::make_error(
          rdmaqos::ErrorCode::kTimeout,
          fmt::format("no reply from {} within {} ms", socket_path, timeout.count()));
    }
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return sys_error("poll", errno);
    if (rc == 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(fmt::format("cannot read from {}", socket_path), errno);
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  auto line = reply.substr(0, reply.find('\n'));
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kMalformed,
                               fmt::format("{} sent no JSON reply: '{}'", socket_path, line));
  }
  return j;
}

rdmaqos::Result<nlohmann::json> parse_control_request(std::string_view line) {
  auto body = nlohmann::json::parse(line, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("command") ||
      !body["command"].is_string()) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kMalformed,
                               "malformed request: expected {\"command\": NAME}");
  }
  return body;
}

rdmaqos::Result<ControlCommand> read_control_command(const nlohmann::json& body) {
  const std::string& command = body.at("command").get_ref<const std::string&>();
  ControlCommand out;
  if (command == "reload") {
    out.action = ControlAction::kReload;
  } else if (command == "rediscover") {
    out.action = ControlAction::kRediscover;
    if (auto full = body.find("full"); full != body.end()) {
      if (!full->is_boolean())
        return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                                   "rediscover: 'full' must be true or false");
      out.full = full->get<bool>();
    }
  } else if (command == "stats") {
    out.action = ControlAction::kStats;
  } else if (command == "explain") {
    out.action = ControlAction::kExplain;
  } else if (command == "pause") {
    out.action = ControlAction::kPause;
  } else if (command == "resume") {
    out.action = ControlAction::kResume;
  } else {
    return rdmaqos::make_error(
        rdmaqos::ErrorCode::kInvalidArgument,
        fmt::format("unknown command '{}' (reload, rediscover, stats, explain, pause, resume)",
                    command));
  }
  return out;
}

bool changes_state(ControlAction action) {
  switch (action) {
    case ControlAction::kReload:
    case ControlAction::kRediscover:
    case ControlAction::kPause:
    case ControlAction::kResume: return true;
    case ControlAction::kStats:
    case ControlAction::kExplain: return false;
  }
  return true;
}

std::optional<nlohmann::json> refusal_for_peer(int connection, const ControlCommand& command,
                                               std::string_view name) {
  if (!changes_state(command.action)) return std::nullopt;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
      (cred.uid == 0 || cred.uid == geteuid()))
    return std::nullopt;
  return nlohmann::json{
      {"ok", false},
      {"message",
       fmt::format("{} needs root: the control socket's group may only read the stats", name)}};
}

std::optional<gid_t> control_group_id(const std::string& name) {
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  if (getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    return found->gr_gid;
  if (auto n = rdmaqos::parse_unsigned(name, UINT32_MAX - 1)) return static_cast<gid_t>(*n);
  return std::nullopt;
}

rdmaqos::Result<void> ControlServer::share_with_group(gid_t group) const {
  if (chown(path_.c_str(), static_cast<uid_t>(-1), group) != 0 || chmod(path_.c_str(), 0660) != 0)
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                               fmt::format("control socket {}: cannot give it to group {}: {}",
                                           path_, group, std::strerror(errno)));
  return {};
}

rdmaqos::Result<std::unique_ptr<ControlServer>> ControlServer::open(const std::string& path) {
  auto addr = rdmaqos::unix_address(path);
  if (!addr) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                               fmt::format("not a socket path (empty, or too long): '{}'", path));
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return sys_error(fmt::format("cannot create {}", dir.string()), errno);
  }
  // A socket someone answers on belongs to a live daemon; an unanswered one is stale.
  if (int fd = connect_to(*addr); fd >= 0) {
    ::close(fd);
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                               fmt::format("{} is in use by a running daemon", path));
  }
  ::unlink(path.c_str());
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (server->listen_fd_ < 0) return sys_error("socket(AF_UNIX)", errno);
  mode_t old = ::umask(0077);
  int rc = ::bind(server->listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  int err = errno;
  ::umask(old);
  if (rc != 0) return sys_error(fmt::format("cannot bind {}", path), err);
  server->path_ = path;
  // Connecting needs write permission: the owner (root under systemd) only.
  if (::chmod(path.c_str(), 0600) != 0) return sys_error(fmt::format("chmod {}", path), errno);
  if (::listen(server->listen_fd_, 8) != 0) return sys_error("listen", errno);
  return server;
}

ControlServer::~ControlServer() {
  for (auto& c : connections_) ::close(c.fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
}

void ControlServer::add_poll_fds(std::vector<pollfd>& fds) const {
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& c : connections_)
    fds.push_back({c.fd, static_cast<short>(c.complete ? 0 : POLLIN), 0});
}

std::vector<ControlServer::Request> ControlServer::process(std::span<const pollfd> fds) {
  std::vector<Request> out;
  std::vector<int> to_close;
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listen_fd_) {
      for (int fd;
           (fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        if (connections_.size() >= kMaxConnections) {
          ::close(fd);
          continue;
        }
        connections_.push_back({fd, {}, false});
      }
      continue;
    }
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [&](const Connection& c) { return c.fd == p.fd; });
    if (it == connections_.end() || it->complete) continue;
    char buf[4096];
    ssize_t n = ::recv(it->fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      to_close.push_back(it->fd);
      continue;
    }
    it->buffer.append(buf, static_cast<size_t>(n));
    size_t nl = it->buffer.find('\n');
    if (nl == std::string::npos) {
      if (it->buffer.size() > kMaxRequest) to_close.push_back(it->fd);
      continue;
    }
    it->complete = true;
    auto body = parse_control_request(std::string_view(it->buffer).substr(0, nl));
    if (!body) {
      reply(it->fd, {{"ok", false}, {"message", body.error().message}});
      continue;
    }
    out.push_back({it->fd, std::move(*body)});
  }
  for (int fd : to_close) {
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [&](const Connection& c) { return c.fd == fd; });
    if (it != connections_.end()) {
      ::close(it->fd);
      connections_.erase(it);
    }
  }
  return out;
}

void ControlServer::reply(int connection, const nlohmann::json& body) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [&](const Connection& c) { return c.fd == connection; });
  if (it == connections_.end()) return;
  // Replies are small; a client that does not read them within a second loses them.
  int flags = ::fcntl(it->fd, F_GETFL);
  ::fcntl(it->fd, F_SETFL, flags & ~O_NONBLOCK);
  timeval tv{1, 0};
  ::setsockopt(it->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  send_all(it->fd, body.dump() + "\n");
  ::close(it->fd);
  connections_.erase(it);
}

}  // namespace rdmaqos::sad
