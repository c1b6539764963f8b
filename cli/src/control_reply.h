// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Showing a reply of rdma-qos-sad's control protocol (also the OpenSM plugin's).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rdmaqos::cli {

// The counters of a `stats` reply in human form (the daemon's or the plugin's).
void print_stats(const nlohmann::json& stats);

// The reply to `command`: as JSON, the stats in human form, or the diagnostics and the message
// (on stderr when the daemon refused). The caller sets the exit status from "ok".
void show_control_reply(const nlohmann::json& reply, const std::string& command, bool json);

}  // namespace rdmaqos::cli
