// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The answers a fake SA transport has composed but not yet "sent": each is held until its
// delay has passed, and receive() hands them out in order, waiting at most its timeout. The
// kernel listener's and the path service's unit tests put their scripted SAs in front of it.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/transport.h"

namespace rdmaqos::kmod::testing {

class HeldReplies {
 public:
  using Clock = std::chrono::steady_clock;

  void hold(std::vector<uint8_t> mad, std::chrono::milliseconds delay) {
    held_.push_back({Clock::now() + delay, std::move(mad)});
  }

  // The next reply whose time has come, waiting for it up to `timeout`; none when none came.
  rdmaqos::Result<std::optional<sa::ReceivedMad>> receive(std::chrono::milliseconds timeout) {
    auto until = Clock::now() + timeout;
    if (!held_.empty()) until = std::min(until, held_.front().first);
    std::this_thread::sleep_until(until);
    if (!held_.empty() && held_.front().first <= Clock::now()) {
      sa::ReceivedMad r;
      r.bytes = std::move(held_.front().second);
      held_.pop_front();
      return std::optional<sa::ReceivedMad>(std::move(r));
    }
    return std::optional<sa::ReceivedMad>{};
  }

 private:
  std::deque<std::pair<Clock::time_point, std::vector<uint8_t>>> held_;
};

}  // namespace rdmaqos::kmod::testing
