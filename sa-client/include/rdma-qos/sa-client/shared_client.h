// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client for many threads: one per port, shared by every thread of a program (the
// preload module) or a daemon. A Client is single-threaded, so the port may keep a few of them
// (each its own umad agent, opened when every open one is busy) and a call borrows an idle one:
// threads' queries travel at the same time instead of one round trip after another. Each call
// carries the caller's own deadline: it waits for an idle client no longer than that, and the
// queries it sends give up at it, so a slow SA or a busy port costs a caller at most the time
// it was willing to spend.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"
#include "rdma-qos/sa-client/port_paths.h"

namespace rdmaqos::sa {

struct PathCacheOptions;

class SharedClient final : public PortPaths {
 public:
  // Opens another client on the same port when every open one is busy.
  using ClientOpener = std::function<Result<std::unique_ptr<Client>>()>;

  // Opens the umad port named in options.port, and up to `concurrent` - 1 more clients on it
  // when queries overlap (the default: one query at a time, one umad agent); with `cache`,
  // answers are kept in one path cache all of them share.
  static Result<std::unique_ptr<SharedClient>> open(const ClientOptions& options,
                                                    const PathCacheOptions* cache = nullptr,
                                                    size_t concurrent = 1);
  // `client` only: one query at a time. With `open_more`, up to `concurrent` clients.
  explicit SharedClient(std::unique_ptr<Client> client, ClientOpener open_more = {},
                        size_t concurrent = 1);
  ~SharedClient();
  SharedClient(const SharedClient&) = delete;
  SharedClient& operator=(const SharedClient&) = delete;

  Result<ClassPortInfo> class_port_info(Deadline deadline);
  Result<bool> qos_supported(Deadline deadline) override;
  Result<bool> multipath_supported(Deadline deadline) override;
  Result<std::vector<PathRecord>> path_records(const PathQuery& query, Deadline deadline) override;
  Result<std::vector<PathRecord>> multipath_records(const PathQuery& query,
                                                    Deadline deadline) override;

  // The port's SM generation (see Client::sm_generation): the highest any client has seen.
  uint64_t sm_generation() const;

 private:
  template <typename Fn>
  auto borrowed(Deadline deadline, Fn&& fn) -> decltype(fn(std::declval<Client&>()));
  Result<std::unique_ptr<Client>> borrow(Deadline deadline);
  void give_back(std::unique_ptr<Client> client);

  // Held only to take or return a client, never across a query.
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Client>> idle_;
  size_t opened_ = 0;  // idle or borrowed, or being opened
  size_t concurrent_;
  ClientOpener open_more_;
  std::shared_ptr<ClassPortInfoShare> cpi_share_;  // given to every client of the pool
  uint64_t sm_generation_ = 0;
};

}  // namespace rdmaqos::sa
