// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one lock around opening a umad port in rdma-qos-lsd: the kernel listener's workers and the
// path service's open ports from several threads, and libibumad's initialisation (and
// umad2sim's, under test) is not safe against concurrent callers.
#pragma once

#include <mutex>

namespace rdmaqos::kmod {

inline std::mutex& umad_open_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace rdmaqos::kmod
