// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// One port's SA questions asked of the node's path service (rdma-qos-lsd, path_service knob)
// while it is there, and of the process's own SA client when it is not: at start, or from the
// call on which the service went away. Every process of a node then shares one SA query per path
// and needs no umad access; a node without the service works as before, one client per process.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rdma-qos/sa-client/path_service_client.h"
#include "rdma-qos/sa-client/port_paths.h"
#include "retry_backoff.h"

namespace rdmaqos::preload {

class ServiceOrOwnPaths final : public sa::PortPaths {
 public:
  // The port's own client (opened on first use, with its own back-off); null when the port
  // cannot reach an SA now.
  using OwnClient = std::function<std::shared_ptr<sa::PortPaths>()>;
  // Told once per reason why the service is not used (logged by the module).
  using Note = std::function<void(const std::string& key, const std::string& message)>;

  ServiceOrOwnPaths(sa::PathServiceOptions service, OwnClient own, Note note);

  rdmaqos::Result<bool> qos_supported(sa::Deadline deadline) override;
  rdmaqos::Result<bool> multipath_supported(sa::Deadline deadline) override;
  rdmaqos::Result<std::vector<sa::PathRecord>> path_records(const sa::PathQuery& query,
                                                            sa::Deadline deadline) override;
  rdmaqos::Result<std::vector<sa::PathRecord>> multipath_records(const sa::PathQuery& query,
                                                                 sa::Deadline deadline) override;

 private:
  // The service's client, connected now if the back-off allows (a full backlog waited for up to
  // `deadline`); null with `busy` set: it had no room until then; null otherwise: ask the own
  // client.
  std::shared_ptr<sa::PathServiceClient> service(sa::Deadline deadline,
                                                 std::optional<rdmaqos::Error>& busy);
  // The service answered kNotFound on `client`: it went away; the own client takes over until
  // the back-off lets the service be tried again.
  void lost(const std::shared_ptr<sa::PathServiceClient>& client, const rdmaqos::Error& why);
  template <typename T, typename Call>
  rdmaqos::Result<T> ask(sa::Deadline deadline, Call&& call);

  sa::PathServiceOptions options_;
  OwnClient own_;
  Note note_;
  std::mutex mutex_;  // held only to read or replace service_, never across a connect or question
  std::shared_ptr<sa::PathServiceClient> service_;
  RetryBackoff retry_;
};

}  // namespace rdmaqos::preload
