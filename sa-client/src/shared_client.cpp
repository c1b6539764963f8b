// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client for many threads (see shared_client.h): Client is single-threaded, so every call
// takes the port's lock, within the caller's deadline, and bounds the client by that deadline.
#include "rdma-qos/sa-client/shared_client.h"

#include <fmt/format.h>

#include "rdma-qos/sa-client/path_cache.h"

namespace rdmaqos::sa {

Deadline deadline_after(std::chrono::milliseconds budget) {
  if (budget.count() <= 0) return std::nullopt;
  return std::chrono::steady_clock::now() + budget;
}

Result<std::unique_ptr<SharedClient>> SharedClient::open(const ClientOptions& options,
                                                         const PathCacheOptions* cache) {
  auto client = Client::open(options);
  if (!client) return client.error();
  if (cache != nullptr) (*client)->set_cache(std::make_shared<PathCache>(*cache));
  return std::make_unique<SharedClient>(std::move(*client));
}

SharedClient::SharedClient(std::unique_ptr<Client> client) : client_(std::move(client)) {}

SharedClient::~SharedClient() = default;

template <typename Fn>
auto SharedClient::locked(Deadline deadline, Fn&& fn) -> decltype(fn(std::declval<Client&>())) {
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!deadline)
    lock.lock();
  else if (!lock.try_lock_until(*deadline))
    return make_error(ErrorCode::kTimeout,
                      "the SA port stayed busy with other threads' queries past the caller's "
                      "deadline");
  client_->set_deadline(deadline);
  auto result = fn(*client_);
  client_->set_deadline(std::nullopt);
  return result;
}

Result<ClassPortInfo> SharedClient::class_port_info(Deadline deadline) {
  return locked(deadline, [](Client& c) { return c.class_port_info(); });
}

Result<bool> SharedClient::qos_supported(Deadline deadline) {
  return locked(deadline, [](Client& c) { return c.qos_supported(); });
}

Result<bool> SharedClient::multipath_supported(Deadline deadline) {
  return locked(deadline, [](Client& c) -> Result<bool> {
    auto cpi = c.class_port_info();
    if (!cpi) return cpi.error();
    return cpi->multipath_supported();
  });
}

Result<std::vector<PathRecord>> SharedClient::path_records(const PathQuery& query,
                                                           Deadline deadline) {
  return locked(deadline, [&query](Client& c) { return c.path_records(query); });
}

Result<std::vector<PathRecord>> SharedClient::multipath_records(const PathQuery& query,
                                                                Deadline deadline) {
  auto converted = multipath_query_from(query);
  if (!converted) return converted.error();
  return locked(deadline, [&converted](Client& c) { return c.multipath_records(*converted); });
}

uint64_t SharedClient::sm_generation() const {
  std::lock_guard lock(mutex_);
  return client_->sm_generation();
}

}  // namespace rdmaqos::sa
