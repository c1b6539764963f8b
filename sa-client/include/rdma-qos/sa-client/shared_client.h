// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client for many threads: one per port, shared by every thread of a program (the
// preload module) or a daemon. Each call carries the caller's own deadline: it waits for the
// port's lock no longer than that, and the queries it sends give up at it, so a slow SA or a
// busy port costs a caller at most the time it was willing to spend.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa {

struct PathCacheOptions;

// nullopt: no bound (the client's own timeouts and retries only).
using Deadline = std::optional<std::chrono::steady_clock::time_point>;
// A deadline `budget` from now; none for a zero or negative budget.
Deadline deadline_after(std::chrono::milliseconds budget);

class SharedClient {
 public:
  // Opens the umad port named in options.port; with `cache`, answers are kept in a path cache.
  static Result<std::unique_ptr<SharedClient>> open(const ClientOptions& options,
                                                    const PathCacheOptions* cache = nullptr);
  explicit SharedClient(std::unique_ptr<Client> client);
  ~SharedClient();
  SharedClient(const SharedClient&) = delete;
  SharedClient& operator=(const SharedClient&) = delete;

  Result<ClassPortInfo> class_port_info(Deadline deadline);
  Result<bool> qos_supported(Deadline deadline);
  Result<bool> multipath_supported(Deadline deadline);
  Result<std::vector<PathRecord>> path_records(const PathQuery& query, Deadline deadline);
  // The PathRecord query's requirements sent as a MultiPathRecord (multipath_query_from).
  Result<std::vector<PathRecord>> multipath_records(const PathQuery& query, Deadline deadline);

  // The port's SM generation (see Client::sm_generation), as of the last call.
  uint64_t sm_generation() const;

 private:
  template <typename Fn>
  auto locked(Deadline deadline, Fn&& fn) -> decltype(fn(std::declval<Client&>()));

  mutable std::timed_mutex mutex_;  // held across every call that uses client_
  std::unique_ptr<Client> client_;
};

}  // namespace rdmaqos::sa
