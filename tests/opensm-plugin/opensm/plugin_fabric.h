// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// OpenSM on ibsim with the rdma-qos plugin loaded: the options every plugin test starts from.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace rdmaqos::osmp::testing {

// The fat tree (`tree`, its LMC OpenSM's) with OpenSM loading lib<rdma-qos-opensm>.so from the
// build tree, its control socket in the fabric's directory and `options` appended to
// event_plugin_options.
inline testbed::IbFabricOptions plugin_fabric_options(const std::string& options = {},
                                                      const testbed::FatTreeSpec& tree = {}) {
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree(tree));
  o.lmc = tree.lmc;
  // force_log_flush: the plugin's informational lines reach osm.log at once (tests wait for them).
  o.opensm_conf =
      "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\nevent_plugin_options "
      "control-socket=" +
      std::string("@DIR@/plugin.sock") + (options.empty() ? "" : " " + options) + "\n";
  o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
  return o;
}

// Waits until OpenSM's log holds `text` (the plugin logs there); false after `budget`.
inline bool wait_for_log(const testbed::IbFabric& fabric, const std::string& text,
                         std::chrono::seconds budget = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + budget;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fabric.opensm_log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Polls until `want` holds (every 200 ms, at most 30 s).
template <typename F>
bool eventually(F want) {
  for (int i = 0; i < 150; ++i) {
    if (want()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// `rdma-qos opensm-plugin COMMAND --json` at the plugin's control socket: its JSON reply.
inline nlohmann::json control(const testbed::IbFabric& f, const std::string& command) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin", command, "--json", "--socket", f.dir() + "/plugin.sock"};
  auto r = testbed::run(p, std::chrono::seconds(20));
  size_t start = r.output.find('{');
  if (start == std::string::npos) return nlohmann::json();
  return nlohmann::json::parse(r.output.substr(start), nullptr, false);
}

inline constexpr const char* kAnswering = "rdma-qos plugin: answering PathRecord";

}  // namespace rdmaqos::osmp::testing
