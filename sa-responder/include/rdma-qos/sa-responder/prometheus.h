// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's counters in Prometheus' text format, from the JSON `stats` reply of its control
// socket (what `rdma-qos sad stats --format prometheus` prints).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rdmaqos::sad {

// Every metric is named rdma_qos_sad_* and labelled with the daemon's ca and port. Missing
// parts of `stats` (an older daemon) leave their metrics out.
std::string prometheus_text(const nlohmann::json& stats);

}  // namespace rdmaqos::sad
