// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A bounded rdma_get_cm_event (see cm_event_wait.h): poll on the channel's descriptor first.
#include "cm_event_wait.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace rdmaqos::preload {

int get_cm_event_within(GetCmEvent get, rdma_event_channel* channel, std::chrono::milliseconds wait,
                        rdma_cm_event** event) {
  using Clock = std::chrono::steady_clock;
  if (get == nullptr || channel == nullptr) {
    errno = EINVAL;
    return -1;
  }
  const auto until = Clock::now() + wait;
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    pollfd p{channel->fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) return get(channel, event);
    if (n == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (errno != EINTR) return -1;  // after EINTR, wait out the rest of the bound
  }
}

}  // namespace rdmaqos::preload
