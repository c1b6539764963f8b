// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The path service's SA side: a few worker threads that take its SA questions. Per port one umad
// agent and one path cache, opened on the first question and again after a failure: the worker
// that takes a port's question streams it and every question of that port that comes meanwhile
// through the agent, up to the SA window at once (the port's other questions wait for that
// stream, not for a worker). The service's loop thread only submits and collects; it never
// waits on the SA.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/kmod-shim/path_service.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_cache.h"
#include "rdma-qos/sa-client/path_service_wire.h"

namespace rdmaqos::kmod {

// One SA question, asked once for every asker that waits on it (a flight).
struct SaJob {
  uint64_t flight = 0;
  std::string device;
  int port = 0;
  sa::path_service::Op op = sa::path_service::Op::kPathRecord;
  sa::PathQuery query;
  std::chrono::steady_clock::time_point deadline;
};

struct SaOutcome {
  uint64_t flight = 0;
  // The op's result: paths for PathRecord and MultiPathRecord, else class_port_info.
  Result<std::vector<sa::PathRecord>> paths = std::vector<sa::PathRecord>{};
  Result<sa::ClassPortInfo> class_port_info = sa::ClassPortInfo{};
  bool from_cache = false;  // answered without a MAD to the SA
};

class PathWorkers {
 public:
  PathWorkers(PathServiceOptions options, LogSink log);
  ~PathWorkers();  // joins the workers; jobs still queued are dropped
  PathWorkers(const PathWorkers&) = delete;
  PathWorkers& operator=(const PathWorkers&) = delete;

  void submit(SaJob job);
  // Readable while outcomes wait in take_done(): the loop thread polls it.
  int ready_fd() const { return ready_fd_; }
  std::vector<SaOutcome> take_done();
  // New settings: every port's client (and its cache) is dropped and opened again with them by
  // the next question; a question in flight keeps the client it has.
  void reconfigure(PathServiceOptions options);

 private:
  struct Port;
  void work();
  std::shared_ptr<Port> port_for(const SaJob& job);
  void stream(Port& port);
  Result<sa::Client*> open(Port& port);
  std::optional<SaJob> next_of(Port& port, std::vector<SaJob>& class_port_info);
  void post(SaOutcome outcome);
  void say(Priority level, const std::string& message) const {
    if (log_) log_(level, message);
  }

  LogSink log_;
  int ready_fd_ = -1;
  std::mutex mutex_;  // guards everything below; never held across an SA query or an open
  std::condition_variable queued_;
  PathServiceOptions options_;
  std::deque<std::shared_ptr<Port>> ready_;  // ports with questions and no stream under way
  std::vector<SaOutcome> done_;
  std::map<std::pair<std::string, int>, std::shared_ptr<Port>> ports_;
  bool quitting_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rdmaqos::kmod
