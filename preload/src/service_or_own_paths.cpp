// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node's path service first, the process's own SA client when the service is absent (see
// service_or_own_paths.h).
#include "service_or_own_paths.h"

#include <fmt/format.h>

namespace rdmaqos::preload {
namespace {

// A service that is not running is tried again after 1 s, then twice as long each time up to
// 60 s: a node whose lsd restarts gets it back within a minute, and a node without one pays a
// failed connect (a few microseconds) at most once a minute per port.
constexpr std::chrono::milliseconds kServiceRetryFirst{1000};
constexpr std::chrono::milliseconds kServiceRetryMax{60000};
// How long a question without a deadline waits for room in a busy service's backlog.
constexpr std::chrono::milliseconds kBusyWaitNoDeadline{1000};

}  // namespace

ServiceOrOwnPaths::ServiceOrOwnPaths(sa::PathServiceOptions service, OwnClient own, Note note)
    : options_(std::move(service)),
      own_(std::move(own)),
      note_(std::move(note)),
      retry_(kServiceRetryFirst, kServiceRetryMax) {}

std::shared_ptr<sa::PathServiceClient> ServiceOrOwnPaths::service(
    sa::Deadline deadline, std::optional<rdmaqos::Error>& busy) {
  {
    std::lock_guard lock(mutex_);
    if (service_) return service_;
    if (!retry_.may_try(RetryBackoff::Clock::now())) return nullptr;
  }
  // A local connect, outside the lock: it waits only while the service's backlog is full, and
  // no longer than this caller's deadline (other threads keep their own).
  const auto until = deadline ? *deadline : RetryBackoff::Clock::now() + kBusyWaitNoDeadline;
  auto connected = sa::PathServiceClient::connect(options_, until);
  std::lock_guard lock(mutex_);
  if (service_) {  // another thread connected meanwhile: ours (or its failure) is dropped
    connected.ignore_error();
    return service_;
  }
  if (connected) {
    service_ = std::move(*connected);
    retry_.succeeded();
    return service_;
  }
  // Busy is the service being there, with no room until the deadline: the question fails as
  // busy (its time is spent; the own client could only time out and mark the SA down), and the
  // next one tries the service again (no back-off, no note).
  if (connected.error().code == rdmaqos::ErrorCode::kBusy) {
    busy = connected.error();
    return nullptr;
  }
  retry_.failed(RetryBackoff::Clock::now());
  note_("path_service_absent:" + options_.socket_path,
        fmt::format("{}; this process asks the SA itself", connected.error().message));
  return nullptr;
}

void ServiceOrOwnPaths::lost(const std::shared_ptr<sa::PathServiceClient>& client,
                             const rdmaqos::Error& why) {
  std::lock_guard lock(mutex_);
  if (service_ != client) return;  // another thread saw it first
  service_.reset();
  retry_.failed(RetryBackoff::Clock::now());
  note_("path_service_lost:" + options_.socket_path,
        fmt::format("{}; this process asks the SA itself until it is back", why.message));
}

template <typename T, typename Call>
rdmaqos::Result<T> ServiceOrOwnPaths::ask(sa::Deadline deadline, Call&& call) {
  std::optional<rdmaqos::Error> busy;
  if (auto s = service(deadline, busy)) {
    rdmaqos::Result<T> r = call(*s);
    // Anything the service answered is the SA's answer (or its failure) for the whole node;
    // kBusy (no room for the question in time) says nothing of the SA and is the caller's.
    if (r || r.error().code != rdmaqos::ErrorCode::kNotFound) return r;
    lost(s, r.error());
  } else if (busy) {
    return std::move(*busy);
  }
  std::shared_ptr<sa::PortPaths> own = own_();
  if (!own)
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "the port cannot reach an SA now");
  return call(*own);
}

rdmaqos::Result<bool> ServiceOrOwnPaths::qos_supported(sa::Deadline deadline) {
  return ask<bool>(deadline, [&](sa::PortPaths& p) { return p.qos_supported(deadline); });
}

rdmaqos::Result<bool> ServiceOrOwnPaths::multipath_supported(sa::Deadline deadline) {
  return ask<bool>(deadline, [&](sa::PortPaths& p) { return p.multipath_supported(deadline); });
}

rdmaqos::Result<std::vector<sa::PathRecord>> ServiceOrOwnPaths::path_records(
    const sa::PathQuery& query, sa::Deadline deadline) {
  return ask<std::vector<sa::PathRecord>>(
      deadline, [&](sa::PortPaths& p) { return p.path_records(query, deadline); });
}

rdmaqos::Result<std::vector<sa::PathRecord>> ServiceOrOwnPaths::multipath_records(
    const sa::PathQuery& query, sa::Deadline deadline) {
  return ask<std::vector<sa::PathRecord>>(
      deadline, [&](sa::PortPaths& p) { return p.multipath_records(query, deadline); });
}

}  // namespace rdmaqos::preload
