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

}  // namespace

ServiceOrOwnPaths::ServiceOrOwnPaths(sa::PathServiceOptions service, OwnClient own, Note note)
    : options_(std::move(service)),
      own_(std::move(own)),
      note_(std::move(note)),
      retry_(kServiceRetryFirst, kServiceRetryMax) {}

std::shared_ptr<sa::PathServiceClient> ServiceOrOwnPaths::service() {
  std::lock_guard lock(mutex_);
  if (service_) return service_;
  auto now = RetryBackoff::Clock::now();
  if (!retry_.may_try(now)) return nullptr;
  // A local connect: it never waits (a full backlog is an error, not a wait).
  auto connected = sa::PathServiceClient::connect(options_);
  if (connected) {
    service_ = std::move(*connected);
    retry_.succeeded();
    return service_;
  }
  retry_.failed(now);
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
rdmaqos::Result<T> ServiceOrOwnPaths::ask(Call&& call) {
  if (auto s = service()) {
    rdmaqos::Result<T> r = call(*s);
    // Anything the service answered is the SA's answer (or its failure) for the whole node.
    if (r || r.error().code != rdmaqos::ErrorCode::kNotFound) return r;
    lost(s, r.error());
  }
  std::shared_ptr<sa::PortPaths> own = own_();
  if (!own)
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "the port cannot reach an SA now");
  return call(*own);
}

rdmaqos::Result<bool> ServiceOrOwnPaths::qos_supported(sa::Deadline deadline) {
  return ask<bool>([&](sa::PortPaths& p) { return p.qos_supported(deadline); });
}

rdmaqos::Result<bool> ServiceOrOwnPaths::multipath_supported(sa::Deadline deadline) {
  return ask<bool>([&](sa::PortPaths& p) { return p.multipath_supported(deadline); });
}

rdmaqos::Result<std::vector<sa::PathRecord>> ServiceOrOwnPaths::path_records(
    const sa::PathQuery& query, sa::Deadline deadline) {
  return ask<std::vector<sa::PathRecord>>(
      [&](sa::PortPaths& p) { return p.path_records(query, deadline); });
}

rdmaqos::Result<std::vector<sa::PathRecord>> ServiceOrOwnPaths::multipath_records(
    const sa::PathQuery& query, sa::Deadline deadline) {
  return ask<std::vector<sa::PathRecord>>(
      [&](sa::PortPaths& p) { return p.multipath_records(query, deadline); });
}

}  // namespace rdmaqos::preload
