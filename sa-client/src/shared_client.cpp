// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client for many threads (see shared_client.h): Client is single-threaded, so every call
// borrows an idle client of the port (or opens one more), within the caller's deadline, and
// bounds that client by the deadline.
#include "rdma-qos/sa-client/shared_client.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdma-qos/sa-client/path_cache.h"

namespace rdmaqos::sa {

Deadline deadline_after(std::chrono::milliseconds budget) {
  if (budget.count() <= 0) return std::nullopt;
  return std::chrono::steady_clock::now() + budget;
}

Result<std::unique_ptr<SharedClient>> SharedClient::open(const ClientOptions& options,
                                                         const PathCacheOptions* cache,
                                                         size_t concurrent) {
  std::shared_ptr<PathCache> shared_cache;
  if (cache != nullptr) shared_cache = std::make_shared<PathCache>(*cache);
  auto open_one = [options, shared_cache]() -> Result<std::unique_ptr<Client>> {
    auto client = Client::open(options);
    if (!client) return client.error();
    if (shared_cache) (*client)->set_cache(shared_cache);
    return std::move(*client);
  };
  auto first = open_one();
  if (!first) return first.error();
  return std::make_unique<SharedClient>(std::move(*first), open_one, concurrent);
}

SharedClient::SharedClient(std::unique_ptr<Client> client, ClientOpener open_more,
                           size_t concurrent)
    : opened_(1),
      concurrent_(std::max<size_t>(concurrent, 1)),
      open_more_(std::move(open_more)),
      cpi_share_(std::make_shared<ClassPortInfoShare>()) {
  // The pool's clients read the port's ClassPortInfo once between them, not once each.
  client->set_class_port_info_share(cpi_share_);
  idle_.push_back(std::move(client));
}

SharedClient::~SharedClient() = default;

Result<std::unique_ptr<Client>> SharedClient::borrow(Deadline deadline) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    if (opened_ < concurrent_ && open_more_) {
      // Opened outside the lock: a umad open takes a few system calls.
      ++opened_;
      lock.unlock();
      auto more = open_more_();
      if (more) {
        (*more)->set_class_port_info_share(cpi_share_);
        return std::move(*more);
      }
      lock.lock();
      --opened_;
      // The port refuses another agent: wait for one of the open clients instead.
      concurrent_ = std::max<size_t>(opened_, 1);
      continue;
    }
    if (!deadline)
      returned_.wait(lock);
    else if (returned_.wait_until(lock, *deadline) == std::cv_status::timeout && idle_.empty())
      return make_error(ErrorCode::kTimeout,
                        "the SA port stayed busy with other threads' queries past the caller's "
                        "deadline");
  }
}

void SharedClient::give_back(std::unique_ptr<Client> client) {
  {
    std::lock_guard lock(mutex_);
    sm_generation_ = std::max(sm_generation_, client->sm_generation());
    idle_.push_back(std::move(client));
  }
  returned_.notify_one();
}

template <typename Fn>
auto SharedClient::borrowed(Deadline deadline, Fn&& fn) -> decltype(fn(std::declval<Client&>())) {
  auto client = borrow(deadline);
  if (!client) return client.error();
  // Returned however the call ends (an exception included): a lost client would leave the
  // port one agent short for good.
  struct GiveBack {
    SharedClient* self;
    std::unique_ptr<Client> c;
    ~GiveBack() {
      c->set_deadline(std::nullopt);
      self->give_back(std::move(c));
    }
  } lent{this, std::move(*client)};
  lent.c->set_deadline(deadline);
  return fn(*lent.c);
}

Result<ClassPortInfo> SharedClient::class_port_info(Deadline deadline) {
  return borrowed(deadline, [](Client& c) { return c.class_port_info(); });
}

Result<bool> SharedClient::qos_supported(Deadline deadline) {
  return borrowed(deadline, [](Client& c) { return c.qos_supported(); });
}

Result<bool> SharedClient::multipath_supported(Deadline deadline) {
  return borrowed(deadline, [](Client& c) -> Result<bool> {
    auto cpi = c.class_port_info();
    if (!cpi) return cpi.error();
    return cpi->multipath_supported();
  });
}

Result<std::vector<PathRecord>> SharedClient::path_records(const PathQuery& query,
                                                           Deadline deadline) {
  return borrowed(deadline, [&query](Client& c) { return c.path_records(query); });
}

Result<std::vector<PathRecord>> SharedClient::multipath_records(const PathQuery& query,
                                                                Deadline deadline) {
  auto converted = multipath_query_from(query);
  if (!converted) return converted.error();
  return borrowed(deadline, [&converted](Client& c) { return c.multipath_records(*converted); });
}

uint64_t SharedClient::sm_generation() const {
  std::lock_guard lock(mutex_);
  return sm_generation_;
}

}  // namespace rdmaqos::sa
