// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How long the plugin holds OpenSM's lock to copy the subnet (its snapshot_seconds) on a fabric
// near ibsim's 2,048 nodes: at the first sweep, then at heavy re-sweeps (SIGHUP). Label bench.
#include <gtest/gtest.h>
#include <signal.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace rdmaqos::osmp {
namespace {

using namespace std::chrono_literals;

// The plugin's `fabric` stats (models, snapshot_seconds, ...); null when it does not answer.
nlohmann::json fabric_stats(const testbed::IbFabric& f) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin", "stats", "--json", "--socket", f.dir() + "/plugin.sock"};
  auto r = testbed::run(p, 30s);
  const auto at = r.output.find('{');
  if (r.exit_code != 0 || at == std::string::npos) return nullptr;
  auto j = nlohmann::json::parse(r.output.substr(at), nullptr, false);
  return j.is_object() ? j["fabric"] : nlohmann::json(nullptr);
}

TEST(PluginSnapshot, SecondsUnderOpenSmsLockAt2000Nodes) {
  testbed::FatTreeSpec spec;
  spec.cas = 1980;
  spec.cas_per_leaf = 32;
  spec.spines = 4;
  testbed::IbFabricOptions o = testing::plugin_fabric_options();
  o.topology = testbed::make_fat_tree(spec);
  o.policy =
      "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\nend-qos-levels\n";
  o.start_timeout = 900s;
  testbed::IbFabric f(o);
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering, 300s));
  nlohmann::json first = fabric_stats(f);
  ASSERT_TRUE(first.is_object());
  std::vector<double> seconds = {first["snapshot_seconds"].get<double>()};
  const pid_t opensm = f.pids().back();
  constexpr int kResweeps = 5;
  for (int i = 0; i < kResweeps; ++i) {
    const int models = fabric_stats(f)["models"].get<int>();
    ASSERT_EQ(kill(opensm, SIGHUP), 0);
    nlohmann::json now;
    for (auto deadline = std::chrono::steady_clock::now() + 300s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(200ms)) {
      now = fabric_stats(f);
      if (now.is_object() && now["models"].get<int>() > models) break;
    }
    ASSERT_TRUE(now.is_object() && now["models"].get<int>() > models) << "no new model " << i;
    seconds.push_back(now["snapshot_seconds"].get<double>());
  }
  const nlohmann::json last = fabric_stats(f);
  std::vector<double> resweeps(seconds.begin() + 1, seconds.end());
  std::sort(resweeps.begin(), resweeps.end());
  // snapshot_seconds is the last copy's; a sweep may copy more than once (a model per change
  // OpenSM reports), so the maximum can come from a copy between two readings.
  fmt::print(
      "{} nodes ({} CAs), {} endpoints: start-up: last copy {:.1f} ms, longest of {} {:.1f} ms; "
      "after each of {} heavy re-sweeps: median {:.1f} ms, {:.1f}-{:.1f} ms; longest of all {} "
      "copies {:.1f} ms\n",
      o.topology.nodes.size(), spec.cas, last["endpoints"].get<size_t>(), seconds[0] * 1e3,
      first["models"].get<int>() + first["model_failures"].get<int>(),
      first["snapshot_seconds_max"].get<double>() * 1e3, kResweeps,
      resweeps[resweeps.size() / 2] * 1e3, resweeps.front() * 1e3, resweeps.back() * 1e3,
      last["models"].get<int>() + last["model_failures"].get<int>(),
      last["snapshot_seconds_max"].get<double>() * 1e3);
  EXPECT_GT(last["endpoints"].get<size_t>(), static_cast<size_t>(spec.cas));
}

}  // namespace
}  // namespace rdmaqos::osmp
