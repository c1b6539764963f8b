// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The OpenSM plugin's stats reply as Prometheus metric families (what `rdma-qos opensm-plugin
// stats --format prometheus` prints). Kept apart from the command so the plugin's tests can
// check that every number of its stats is exported.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rdmaqos::cli {

std::string plugin_prometheus_text(const nlohmann::json& stats);

}  // namespace rdmaqos::cli
