// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service, rdma-qos-lsd's server side of sa-client's path_service_wire.h: local
// programs (the preload module) ask their paths over a SOCK_SEQPACKET socket, and the node asks
// the SA once per query for all of them, kept for the cache's TTL. Identical questions in flight
// at once (32 ranks of a job asking the same path at its start) are asked of the SA once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rdma-qos/common/result.h"
#include "rdma-qos/kmod-shim/lsd.h"
#include "rdma-qos/kmod-shim/lsd_counters.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_cache.h"
#include "rdma-qos/sa-client/transport.h"

namespace rdmaqos::kmod {

struct PathServiceOptions {
  // Per-attempt timeout, retries, window; the umad port is the one each question names.
  sa::ClientOptions sa;
  // The SA's LID for one port (the sa_lid knob); nullopt, or unset: sa.sa_lid.
  std::function<std::optional<uint16_t>(const std::string& device, int port)> sa_lid_of;
  // One cache per port (SM generations of different ports do not compare); ttl: cache_ttl.
  sa::PathCacheOptions cache;
  // Threads that ask the SA: each streams one port's questions at a time (up to sa.window of
  // them outstanding on the port's one umad agent), so this many ports are asked at once.
  size_t workers = 4;
  // The longest a question waits for the SA (each question's own budget_ms may be shorter);
  // zero: answer_budget of these SA settings.
  std::chrono::milliseconds budget{0};
  // Whether askers share: identical questions in flight at once are asked of the SA once and the
  // cache answers the next askers. false: every program's questions are its own (one SA query
  // each, no cache), the load a node puts on the SA when each program asks for itself; the
  // storm bench's baseline, never a node's setting.
  bool shared = true;
  // Connections served at once; more are closed (a local user must not exhaust the fds).
  size_t max_connections = 1024;
  // How long a port that could not be opened answers with that error before it is tried again.
  std::chrono::milliseconds reopen_after{std::chrono::seconds(5)};
  // Opens the umad transport of one port; default: sa::open_umad_transport. Tests pass a fake.
  std::function<Result<std::unique_ptr<sa::Transport>>(const sa::UmadOptions& port)> open_transport;
  // Kept by the caller across reloads; none: not counted.
  std::shared_ptr<LsdCounters> counters;
};

// The budget a question gets at most: options.budget, or answer_budget of options.sa.
std::chrono::milliseconds path_service_budget(const PathServiceOptions& options);

class PathService {
 public:
  // Serves `listen_fd`, a bound and listening SOCK_SEQPACKET socket that stays the caller's (a
  // reload keeps it, and systemd may own it); it is made non-blocking here.
  static Result<std::unique_ptr<PathService>> create(int listen_fd, PathServiceOptions options,
                                                     LogSink log);
  ~PathService();
  PathService(const PathService&) = delete;
  PathService& operator=(const PathService&) = delete;

  // Serves until stop(); returns 0, or 1 after a fatal socket error.
  int run();
  // Async-signal-safe.
  void stop();
  // New SA settings (a reload): the caches are flushed and each port's SA clients are opened
  // again with them; connections and questions in flight stay. Any thread.
  void reconfigure(PathServiceOptions options);

 private:
  struct Impl;
  explicit PathService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Makes the listening socket at `path`: creates its directory (0755) if needed, removes a stale
// socket file (nobody accepts on it), binds and listens, and makes it 0666, since a path is
// what any SA client of the fabric may read. Errors: another service listens there, or the
// socket cannot be made.
Result<int> bind_path_socket(const std::string& path);

}  // namespace rdmaqos::kmod
