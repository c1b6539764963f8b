// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's metrics (what `rdma-qos opensm-plugin stats --format prometheus` shows): its
// table is sound, and every number of the engine's real stats, after it answered, is the value
// of the sample the metrics give it, so a counter added to the stats fails here until it is a
// metric too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
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
  EXPECT_TRUE(e.metrics().problems().empty()) << ::testing::PrintToString(e.metrics().problems());
  return e.stats();
}

// The metric family and label values each number of the stats is exported as.
struct Row {
  const char* family;  // without the prefix
  std::vector<std::string> labels;
};

const std::map<std::string, Row>& scalar_rows() {
  static const std::map<std::string, Row> rows = {
      {"plugin.uptime_seconds", {"uptime_seconds", {}}},
      {"plugin.fallbacks", {"fallbacks_total", {}}},
      {"requests", {"requests_received_total", {}}},
      {"responses", {"responses_sent_total", {}}},
      {"workers.deferred", {"deferred_total", {}}},
      {"workers.busy", {"busy_total", {}}},
      {"policy.rules", {"policy_rules", {}}},
      {"policy.reloads", {"reloads_total", {"ok"}}},
      {"policy.reload_failures", {"reloads_total", {"failed"}}},
      {"policy.reads", {"policy_file_reads_total", {}}},
      {"policy.parses", {"policy_parses_total", {}}},
      {"policy.compiles", {"policy_compilations_total", {"compiled"}}},
      {"policy.compiles_skipped", {"policy_compilations_total", {"kept"}}},
      {"qos_setup.heavy_sweeps", {"qos_setup_heavy_sweeps_total", {}}},
      {"qos_setup.builds", {"qos_setup_builds_total", {}}},
      {"qos_setup.scopes", {"qos_setup_scopes", {}}},
      {"fabric.endpoints", {"fabric_endpoints", {}}},
      {"fabric.models", {"models_total", {"ok"}}},
      {"fabric.model_failures", {"models_total", {"failed"}}},
      {"fabric.snapshot_seconds", {"snapshot_seconds", {}}},
      {"fabric.snapshot_seconds_max", {"snapshot_seconds_max", {}}},
  };
  return rows;
}

// Objects of the stats whose every key is the label value of one family's sample.
const std::map<std::string, const char*>& keyed_rows() {
  static const std::map<std::string, const char*> rows = {
      {"statuses", "responses_total"},    {"dropped", "dropped_total"},
      {"mad_errors", "mad_errors_total"}, {"bounded", "bounded_total"},
      {"rejections", "rejections_total"}, {"fallback_reasons", "fallbacks_by_reason_total"},
  };
  return rows;
}

// The value of the sample of `family` (without the prefix) with these label values, if any.
std::optional<double> sample(const common::metrics::Snapshot& m, const std::string& family,
                             const std::vector<std::string>& labels) {
  for (const auto& f : m.families()) {
    if (f.name != "rdma_qos_opensm_plugin_" + family) continue;
    for (const auto& s : f.samples)
      if (s.labels == labels) return s.value;
  }
  return std::nullopt;
}

TEST(PluginMetrics, TableIsSound) {
  EXPECT_TRUE(plugin_metric_table().problems().empty())
      << ::testing::PrintToString(plugin_metric_table().problems());
}

TEST(PluginMetrics, EveryNumberOfTheStatsIsExported) {
  nlohmann::json stats = busy_engine_stats();
  ASSERT_TRUE(stats["methods"].size() > 0 && stats["levels"].size() > 0) << stats.dump();
  ASSERT_EQ(stats["bounded"]["records"], 1) << stats.dump();
  auto read = common::metrics::Snapshot::from_json(stats["metrics"]);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const common::metrics::Snapshot& m = *read;
  size_t checked = 0;
  auto expect = [&](const std::string& path, const nlohmann::json& v, const std::string& family,
                    const std::vector<std::string>& labels) {
    auto got = sample(m, family, labels);
    ASSERT_TRUE(got.has_value()) << path << " is not exported as " << family;
    EXPECT_DOUBLE_EQ(*got, v.get<double>()) << path << " as " << family;
    ++checked;
  };
  for (const auto& [group, g] : stats.items()) {
    if (group == "metrics" || group == "latency") continue;
    if (keyed_rows().contains(group)) {
      for (const auto& [key, v] : g.items())
        expect(group + "." + key, v, keyed_rows().at(group), {key});
    } else if (group == "methods") {
      for (const auto& [key, v] : g.items()) {
        const auto space = key.find(' ');
        expect("methods." + key, v, "requests_total",
               {key.substr(0, space), key.substr(space + 1)});
      }
    } else if (group == "levels") {
      for (const auto& [level, c] : g.items()) {
        expect("levels." + level, c["records"], "pairs_total", {level, "record"});
        expect("levels." + level, c["rejected"], "pairs_total", {level, "rejected"});
      }
    } else if (g.is_number()) {
      ASSERT_TRUE(scalar_rows().contains(group)) << group << " has no metric";
      const Row& r = scalar_rows().at(group);
      expect(group, g, r.family, r.labels);
    } else if (g.is_object()) {
      for (const auto& [key, v] : g.items()) {
        const std::string path = group + "." + key;
        if (!v.is_number() || path == "plugin.pid") continue;
        ASSERT_TRUE(scalar_rows().contains(path)) << path << " has no metric";
        const Row& r = scalar_rows().at(path);
        expect(path, v, r.family, r.labels);
      }
    }
  }
  EXPECT_GT(checked, 30u);
  EXPECT_EQ(sample(m, "info", {stats["plugin"]["pid"].dump()}), 1);
  EXPECT_EQ(sample(m, "answering", {}), 1);
  // Answering: no reason why OpenSM's handlers would.
  for (const auto& f : m.families()) {
    if (f.name == "rdma_qos_opensm_plugin_handed_to_opensm_info") {
      EXPECT_TRUE(f.samples.empty());
    }
  }
  const auto& l = stats["latency"];
  for (const auto& f : m.families()) {
    if (f.name != "rdma_qos_opensm_plugin_answer_duration_seconds") continue;
    ASSERT_EQ(f.samples.size(), 1u);
    EXPECT_EQ(nlohmann::json(f.samples[0].buckets), l["buckets"]);
    EXPECT_EQ(nlohmann::json(f.samples[0].bounds), l["bounds_seconds"]);
  }
}

TEST(PluginMetrics, NamesTheNewerCountersPlainly) {
  nlohmann::json stats = busy_engine_stats();
  auto text = common::metrics::prometheus_text(stats["metrics"]);
  ASSERT_TRUE(text.ok()) << text.error().message;
  for (const char* line : {
           "rdma_qos_opensm_plugin_policy_file_reads_total ",
           "rdma_qos_opensm_plugin_policy_parses_total ",
           "rdma_qos_opensm_plugin_qos_setup_heavy_sweeps_total 0\n",
           "rdma_qos_opensm_plugin_bounded_total{bound=\"records\"} 1\n",
           "# TYPE rdma_qos_opensm_plugin_qos_setup_scopes gauge\n",
           "rdma_qos_opensm_plugin_reloads_total{result=\"failed\"} 0\n",
           "rdma_qos_opensm_plugin_policy_compilations_total{result=\"compiled\"} 1\n",
       })
    EXPECT_NE(text->find(line), std::string::npos) << line << " in\n" << *text;
  // One HELP and TYPE per family, however many samples it has.
  EXPECT_EQ(text->find("# TYPE rdma_qos_opensm_plugin_reloads_total counter"),
            text->rfind("# TYPE rdma_qos_opensm_plugin_reloads_total counter"));
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  const std::string file = ::testing::TempDir() + "plugin-" + std::to_string(getpid()) + ".prom";
  std::ofstream(file) << *text;
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << *text;
  unlink(file.c_str());
}

}  // namespace
}  // namespace rdmaqos::osmp
