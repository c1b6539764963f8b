// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos opensm-plugin stats --format prometheus` exports every number the plugin's stats
// have: the engine's real stats, after it answered, with each number made unique, must show
// each of them in the Prometheus text.
#include "plugin_prometheus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/path_record.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

std::vector<uint8_t> path_request(uint8_t method, uint64_t mask, sa::PathRecord q) {
  sa::SaMad m;
  m.mad.method = method;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = 0x79;
  m.sa.comp_mask = mask;
  auto bytes = sa::encode_path_record(q);
  m.data.assign(bytes->begin(), bytes->end());
  return sa::encode_sa_mad(m);
}

// The stats of an engine that answered a Get and cut a table at its max-records bound, so the
// keyed groups (methods, statuses, levels, bounded) have members.
nlohmann::json busy_engine_stats() {
  // One file per test: ctest runs the tests in parallel processes.
  const std::string policy = ::testing::TempDir() + "/prometheus-test-" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             ".conf";
  std::ofstream(policy) << "qos-levels\nqos-level\nname: DEFAULT\nsl: 4\nend-qos-level\n"
                           "end-qos-levels\n";
  Options o;
  o.policy = policy;
  o.control_socket = "";
  o.max_records = 1;
  Engine e(
      o, OsmConfig{}, [](bool, const std::string&) {},
      [](FabricBuilder& b) {
        testing::feed_tiny_subnet(b);
        return true;
      });
  EXPECT_TRUE(e.rebuild());
  sa::PathRecord a_to_b;
  a_to_b.slid = 2;
  a_to_b.dlid = 3;
  auto ignore = [](std::span<const uint8_t>) {};
  e.answer(path_request(sa::method::kGet, sa::pr_mask::kSlid | sa::pr_mask::kDlid, a_to_b), 2,
           ignore);
  e.answer(path_request(sa::method::kGetTable, 0, {}), 2, ignore);
  std::remove(policy.c_str());
  return e.stats();
}

// Gives every number outside arrays a value no other has (from 1001 up), and collects them.
// The latency histogram is left as it is: its buckets are summed, not printed one by one.
void make_unique(nlohmann::json& j, const std::string& path, std::vector<std::string>& paths,
                 std::vector<uint64_t>& values) {
  for (auto& [key, v] : j.items()) {
    const std::string here = path.empty() ? key : path + "." + key;
    if (here == "latency") continue;
    if (v.is_object()) {
      make_unique(v, here, paths, values);
    } else if (v.is_number()) {
      v = 1001 + values.size();
      values.push_back(v.get<uint64_t>());
      paths.push_back(here);
    }
  }
}

TEST(PluginPrometheus, EveryNumberOfTheStatsIsExported) {
  nlohmann::json stats = busy_engine_stats();
  ASSERT_TRUE(stats["methods"].size() > 0 && stats["levels"].size() > 0) << stats.dump();
  ASSERT_EQ(stats["bounded"]["records"], 1) << stats.dump();
  std::vector<std::string> paths;
  std::vector<uint64_t> values;
  make_unique(stats, "", paths, values);
  ASSERT_GT(values.size(), 30u);
  const std::string text = cli::plugin_prometheus_text(stats);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string v = std::to_string(values[i]);
    // A sample's value, or (OpenSM's pid) a label's.
    const bool shown = text.find(" " + v + "\n") != std::string::npos ||
                       text.find("\"" + v + "\"") != std::string::npos;
    EXPECT_TRUE(shown) << paths[i] << " (" << v << ") is not exported:\n" << text;
  }
}

TEST(PluginPrometheus, NamesTheNewerCountersPlainly) {
  nlohmann::json stats = busy_engine_stats();
  stats["policy"]["reads"] = 7;
  stats["qos_setup"]["heavy_sweeps"] = 9;
  const std::string text = cli::plugin_prometheus_text(stats);
  for (const char* line : {
           "rdma_qos_opensm_plugin_policy_file_reads_total 7\n",
           "rdma_qos_opensm_plugin_qos_setup_heavy_sweeps_total 9\n",
           "rdma_qos_opensm_plugin_bounded_total{bound=\"records\"} 1\n",
           "# TYPE rdma_qos_opensm_plugin_qos_setup_scopes gauge\n",
           "rdma_qos_opensm_plugin_reloads_total{result=\"failed\"} 0\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  // One HELP and TYPE per family, however many rows it has.
  EXPECT_EQ(text.find("# TYPE rdma_qos_opensm_plugin_reloads_total counter"),
            text.rfind("# TYPE rdma_qos_opensm_plugin_reloads_total counter"));
}

}  // namespace
}  // namespace rdmaqos::osmp
