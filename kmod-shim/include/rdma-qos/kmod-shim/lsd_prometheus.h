// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters in Prometheus' text format, from the JSON `stats` reply of its
// control socket (what `rdma-qos kernel stats --format prometheus` prints).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rdmaqos::kmod {

// Every metric is named rdma_qos_lsd_*. Missing parts of `stats` leave their metrics out.
std::string lsd_prometheus_text(const nlohmann::json& stats);

}  // namespace rdmaqos::kmod
