// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading an rdma_cm event the module waits for itself (a synchronous id's ROUTE_RESOLVED),
// never longer than a bound: rdma_get_cm_event alone blocks until an event comes.
#pragma once

#include <rdma/rdma_cma.h>

#include <chrono>

namespace rdmaqos::preload {

using GetCmEvent = int (*)(rdma_event_channel*, rdma_cm_event**);

// `get` (the real rdma_get_cm_event) once the channel has an event within `wait`; -1 with
// errno ETIMEDOUT when none came (the event, if it comes later, stays on the channel).
int get_cm_event_within(GetCmEvent get, rdma_event_channel* channel, std::chrono::milliseconds wait,
                        rdma_cm_event** event);

}  // namespace rdmaqos::preload
