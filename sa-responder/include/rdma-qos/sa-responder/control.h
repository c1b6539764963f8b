// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The control channel of a running rdma-qos-sad: a unix stream socket that takes one JSON
// request line ({"command": "reload" | "rediscover" | "stats"}) and answers one JSON line
// ({"ok": bool, "message": ..., "diagnostics": [...], "stats": {...}}). The server side is
// polled by the daemon's loop; the client side is what `rdma-qos sad` calls.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/result.h"

namespace rdmaqos::sad {

inline constexpr const char* kControlDir = "/run/rdma-qos";

// /run/rdma-qos/sad-<ca>-<port>.sock: the default socket of the daemon at that port.
std::string control_socket_path(std::string_view ca, int port);
// Sockets of daemons in `dir` (sad-*.sock), sorted.
std::vector<std::string> find_control_sockets(const std::string& dir = kControlDir);

// Sends one request and returns the daemon's reply. Errors: kTransport (no daemon listens,
// or the connection broke), kTimeout, kMalformed (the reply is not JSON).
rdmaqos::Result<nlohmann::json> control_call(const std::string& socket_path,
                                             const nlohmann::json& request,
                                             std::chrono::milliseconds timeout);

// The body of one request line: a JSON object with a "command" string, or the message to
// answer with. What ControlServer::process reads from every connection (untrusted: any member
// of the socket's group may send it).
rdmaqos::Result<nlohmann::json> parse_control_request(std::string_view line);

// What a request asks of rdma-qos-sad or the OpenSM plugin (rdma-qos-lsd answers `stats` only).
// Pause and resume are the plugin's: OpenSM's own handlers answer while it is paused.
enum class ControlAction { kReload, kRediscover, kStats, kExplain, kPause, kResume };
struct ControlCommand {
  ControlAction action = ControlAction::kStats;
  bool full = false;  // rediscover: a full discovery ({"full": true}), not an incremental one
};
// The command of a parsed body, or the message refusing it: an unknown command, or a `full`
// that is not true or false (reading it as a bool threw, and ended the daemon).
rdmaqos::Result<ControlCommand> read_control_command(const nlohmann::json& body);

// Who may ask what, the same for every front end: an action that changes the serving process's
// state (reload, rediscover, pause, resume) only root and the process's own user; the socket's
// group (--control-socket-group, mode 0660) only reads (stats, explain).
bool changes_state(ControlAction action);
// The reply refusing `command` (named `name`) to the peer of `connection`, or nullopt when the
// peer may ask it (SO_PEERCRED; a peer whose credentials cannot be read may only read).
std::optional<nlohmann::json> refusal_for_peer(int connection, const ControlCommand& command,
                                               std::string_view name);
// A --control-socket-group value: a group name, or a numeric GID; nullopt when it is neither.
std::optional<gid_t> control_group_id(const std::string& name);

class ControlServer {
 public:
  // Listens at `path` (mode 0600; the directory is created 0755 when missing). A stale socket
  // left by a dead daemon is replaced; one a live daemon answers on is an error.
  static rdmaqos::Result<std::unique_ptr<ControlServer>> open(const std::string& path);
  ~ControlServer();  // closes every connection and removes the socket
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }
  // Lets `group` use the socket (group ownership, mode 0660); the message says why not.
  rdmaqos::Result<void> share_with_group(gid_t group) const;

  struct Request {
    int connection = -1;  // pass to reply()
    nlohmann::json body;  // an object with a "command" string
  };

  // Appends the descriptors to poll (POLLIN on the listener and on every open connection).
  void add_poll_fds(std::vector<pollfd>& fds) const;
  // Accepts and reads what `fds` (as filled by add_poll_fds and returned by poll) reports;
  // returns the requests now complete. A malformed request is answered with an error here.
  std::vector<Request> process(std::span<const pollfd> fds);
  // Answers a request and closes its connection.
  void reply(int connection, const nlohmann::json& body);

 private:
  ControlServer() = default;
  struct Connection {
    int fd = -1;
    std::string buffer;
    bool complete = false;  // a request was read; waiting for reply()
  };
  std::string path_;
  int listen_fd_ = -1;
  std::vector<Connection> connections_;
};

}  // namespace rdmaqos::sad
