// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd --dump-netlink DIR: each datagram the kernel sends, written raw to a file of its
// own, to see what a real kernel sends (the netlink fuzz target's seeds, bug reports).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "rdma-qos/common/result.h"

namespace rdmaqos::kmod {

class NetlinkDump {
 public:
  explicit NetlinkDump(std::string dir);
  // Writes DIR/netlink-PID-N (N counting from 1). The first failure (kTransport) ends the dump,
  // so the daemon logs it once and serves on; later calls write nothing and succeed.
  rdmaqos::Result<void> write(std::span<const uint8_t> datagram);

 private:
  std::string dir_;
  uint64_t written_ = 0;
  bool stopped_ = false;
};

}  // namespace rdmaqos::kmod
