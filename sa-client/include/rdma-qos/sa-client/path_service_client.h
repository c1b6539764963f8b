// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service, asked for one port: rdma-qos-lsd answers over a local socket what the
// SA answered it (path_service_wire.h), once per query for every process of the node and for
// its cache's TTL. No umad device is opened, so an unprivileged program gets the SA's path too.
//
// A call borrows one of a few connections (one question in flight on each), so a program's
// threads ask at the same time; every call is bounded by its deadline and never blocks past it.
// A service that is not there (no socket, or nobody listening) is ErrorCode::kNotFound: the
// caller then asks the SA itself. A service with no room for the question before the deadline
// (its backlog full, or every connection of this client busy) is ErrorCode::kBusy: nothing is
// known of the SA then. Anything the service answers (a timeout, a MAD status) comes back with
// the SA client's code and message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/sa-client/path_service_wire.h"
#include "rdma-qos/sa-client/port_paths.h"

namespace rdmaqos::sa {

struct PathServiceOptions {
  std::string socket_path = path_service::kDefaultSocket;
  std::string device;
  int port = 1;
  size_t connections = 4;  // questions in flight at once, each on its own connection
  // The bound of a call that has no deadline of its own.
  std::chrono::milliseconds no_deadline_wait{10000};
};

class PathServiceClient final : public PortPaths {
 public:
  // Connects once to show the service is there (kNotFound when it is not); the connection is
  // kept for the first call. A full backlog is waited for until `wait_until` (none: kBusy at
  // once).
  static Result<std::unique_ptr<PathServiceClient>> connect(
      PathServiceOptions options,
      std::optional<std::chrono::steady_clock::time_point> wait_until = std::nullopt);
  ~PathServiceClient() override;
  PathServiceClient(const PathServiceClient&) = delete;
  PathServiceClient& operator=(const PathServiceClient&) = delete;

  Result<bool> qos_supported(Deadline deadline) override;
  Result<bool> multipath_supported(Deadline deadline) override;
  Result<std::vector<PathRecord>> path_records(const PathQuery& query, Deadline deadline) override;
  Result<std::vector<PathRecord>> multipath_records(const PathQuery& query,
                                                    Deadline deadline) override;

  const PathServiceOptions& options() const { return options_; }

 private:
  explicit PathServiceClient(PathServiceOptions options, int first_connection);
  Result<path_service::Answer> ask(path_service::Op op, const PathQuery* query, Deadline deadline);
  Result<int> borrow(std::chrono::steady_clock::time_point until);
  void give_back(int fd, bool reusable);

  PathServiceOptions options_;
  std::mutex mutex_;  // held only to take or return a connection, never across a question
  std::condition_variable returned_;
  std::vector<int> idle_;
  size_t opened_ = 0;  // idle or borrowed
  uint32_t next_id_ = 1;
};

// Opens one connection to the service's socket: the fd, or kNotFound when nothing listens there,
// kBusy when its backlog stayed full until `wait_until` (none: not waited for), kTransport for
// any other failure.
Result<int> connect_path_service(
    const std::string& socket_path,
    std::optional<std::chrono::steady_clock::time_point> wait_until = std::nullopt);

}  // namespace rdmaqos::sa
