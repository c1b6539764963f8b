// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Showing a reply of rdma-qos-sad's control protocol (also the OpenSM plugin's), and the metrics
// of any daemon's stats reply as Prometheus text.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rdmaqos::cli {

// The counters of a `stats` reply in human form (the daemon's or the plugin's).
void print_stats(const nlohmann::json& stats);

// The "metrics" member of a stats reply (the daemon's metric families in their JSON form, see
// common/metrics.h) as Prometheus text on stdout, whichever daemon sent it: rdma-qos-sad,
// rdma-qos-lsd or the OpenSM plugin. False, and why on stderr after `program`, when the reply
// has none or a malformed one.
bool print_prometheus(const nlohmann::json& stats, const std::string& program);

// The reply to `command`: as JSON, the stats in human form, or the diagnostics and the message
// (on stderr when the daemon refused). The caller sets the exit status from "ok".
void show_control_reply(const nlohmann::json& reply, const std::string& command, bool json);

}  // namespace rdmaqos::cli
