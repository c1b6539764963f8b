// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// When to try again something that failed (opening a port's SA client): not before a back-off
// that doubles after each failure up to a ceiling, and at once again after a success. A
// long-running program thus reaches an SA that was down when it first asked, without paying an
// attempt per connection while it stays down.
#pragma once

#include <algorithm>
#include <chrono>

namespace rdmaqos::preload {

class RetryBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  RetryBackoff(std::chrono::milliseconds first, std::chrono::milliseconds ceiling)
      : first_(first), ceiling_(ceiling), next_(first) {}

  // Whether an attempt may be made at `now`.
  bool may_try(Clock::time_point now) const { return now >= retry_at_; }
  // An attempt at `now` failed: the next one waits the current back-off, which then doubles.
  void failed(Clock::time_point now) {
    retry_at_ = now + next_;
    next_ = std::min(next_ * 2, ceiling_);
  }
  // An attempt succeeded: a later failure starts from the first back-off again.
  void succeeded() {
    retry_at_ = {};
    next_ = first_;
  }

 private:
  std::chrono::milliseconds first_, ceiling_, next_;
  Clock::time_point retry_at_{};
};

}  // namespace rdmaqos::preload
