// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's control socket: the protocol of rdma-qos-sad's (one JSON line each way), served
// on a thread of its own so that it outlives the engine a reload replaces. It answers `stats`
// with the counters; anything else is refused (reload is SIGHUP: `systemctl reload`).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "rdma-qos/common/result.h"
#include "rdma-qos/kmod-shim/lsd_counters.h"

namespace rdmaqos::sad {
class ControlServer;
}

namespace rdmaqos::kmod {

inline constexpr const char* kLsdControlSocket = "/run/rdma-qos/lsd.sock";

class LsdControl {
 public:
  // Listens at `path` (mode 0600, or 0660 owned by `group` so that its members read the stats
  // without root) and starts serving. Errors: the socket cannot be made or handed to the group.
  static rdmaqos::Result<std::unique_ptr<LsdControl>> start(
      const std::string& path, std::optional<gid_t> group,
      std::shared_ptr<const LsdCounters> counters);
  ~LsdControl();  // stops the thread and removes the socket
  LsdControl(const LsdControl&) = delete;
  LsdControl& operator=(const LsdControl&) = delete;

 private:
  LsdControl() = default;
  void serve();
  std::unique_ptr<sad::ControlServer> server_;
  std::shared_ptr<const LsdCounters> counters_;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace rdmaqos::kmod
