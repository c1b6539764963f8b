// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Metrics declared once: a table's checks, a snapshot's checks while it is filled, and the JSON
// and Prometheus forms derived from one snapshot (the JSON form, read back, gives the same text;
// label values and help texts escaped; promtool accepts the text where it is installed).
#include "rdma-qos/common/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace rdmaqos::common::metrics {
namespace {

const Table& demo_table() {
  static const Table table(
      "demo_", {"ca", "port"},
      {
          {"info", Type::kGauge, "The daemon (value 1).", {"lid"}},
          {"requests_total", Type::kCounter, "Requests by method.", {"method", "attribute"}},
          {"levels_total", Type::kCounter, "Pairs by level.", {"level"}},
          {"busy_total", Type::kCounter, "Requests answered BUSY."},
          {"answer_duration_seconds", Type::kHistogram,
           "Time to an answer.\nA second line, a \\ too."},
      });
  return table;
}

Snapshot demo_snapshot() {
  Snapshot s(demo_table(), {"mlx5_0", "1"});
  s.add("info", {"7"}, 1);
  s.add("requests_total", {"GetTable", "PathRecord"}, 6);
  s.add("requests_total", {"Get", "ClassPortInfo"}, 4);
  s.add("levels_total", {"ISER \"gold\"\\silver\nbronze"}, 2);
  s.histogram("answer_duration_seconds", {}, {1e-5, 1e-4}, {3, 5, 2}, 0.0012);
  return s;
}

TEST(Metrics, TableChecksWhatPrometheusRefuses) {
  EXPECT_TRUE(demo_table().problems().empty());
  const Table bad("x_", {"ca"},
                  {
                      {"requests", Type::kCounter, "Not *_total."},
                      {"ok_total", Type::kCounter, ""},
                      {"ok_total", Type::kCounter, "Twice."},
                      {"9lives", Type::kGauge, "Fine once prefixed."},
                      {"bad-name", Type::kGauge, "A dash."},
                      {"dup_labels", Type::kGauge, "ca again.", {"ca"}},
                      {"reserved", Type::kGauge, "Reserved label.", {"__x"}},
                      {"latency", Type::kHistogram, "le is Prometheus' own.", {"le"}},
                  });
  const auto problems = bad.problems();
  auto mentions = [&](const std::string& what) {
    for (const auto& p : problems)
      if (p.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(mentions("x_requests is a counter not named *_total"));
  EXPECT_TRUE(mentions("x_ok_total has no help text"));
  EXPECT_TRUE(mentions("x_ok_total is declared twice"));
  EXPECT_FALSE(mentions("x_9lives"));
  EXPECT_TRUE(mentions("'x_bad-name' is not a metric name"));
  EXPECT_TRUE(mentions("x_dup_labels: label ca twice"));
  EXPECT_TRUE(mentions("'__x' is not a label name"));
  EXPECT_TRUE(mentions("x_latency: a histogram may not have a label le"));
  EXPECT_EQ(problems.size(), 7u) << ::testing::PrintToString(problems);
}

TEST(Metrics, SamplesTheTableDoesNotDeclareAreProgrammingErrors) {
  Snapshot s(demo_table(), {"mlx5_0", "1"});
  s.add("nonesuch_total", {}, 1);
  s.add("requests_total", {"Get"}, 1);
  s.add("answer_duration_seconds", {}, 1);
  s.histogram("busy_total", {}, {}, {1}, 0);
  s.histogram("answer_duration_seconds", {}, {1e-5}, {1}, 0);
  ASSERT_EQ(s.problems().size(), 5u) << ::testing::PrintToString(s.problems());
  EXPECT_NE(s.problems()[0].find("nonesuch_total, which the table does not declare"),
            std::string::npos);
  EXPECT_NE(s.problems()[1].find("requests_total with 1 labels; it declares 2"), std::string::npos);
  for (const FamilySamples& f : s.families()) EXPECT_TRUE(f.samples.empty()) << f.name;
  Snapshot wrong_daemon(demo_table(), {"mlx5_0"});
  EXPECT_EQ(wrong_daemon.problems().size(), 1u);
  EXPECT_TRUE(demo_snapshot().problems().empty());
}

TEST(Metrics, EveryDeclaredFamilyIsThereInTheTablesOrder) {
  Snapshot s(demo_table(), {"mlx5_0", "1"});
  ASSERT_EQ(s.families().size(), 5u);
  EXPECT_EQ(s.families()[0].name, "demo_info");
  EXPECT_EQ(s.families()[1].labels,
            (std::vector<std::string>{"ca", "port", "method", "attribute"}));
  EXPECT_EQ(s.families()[4].name, "demo_answer_duration_seconds");
  const std::string text = prometheus_text(s);
  EXPECT_NE(text.find("# TYPE demo_busy_total counter\n"), std::string::npos) << text;
}

TEST(Metrics, JsonFormHasNamesTypesHelpLabelsAndSamples) {
  const nlohmann::json j = to_json(demo_snapshot());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j[1], nlohmann::json::parse(R"({"name": "demo_requests_total", "type": "counter",
      "help": "Requests by method.", "labels": ["ca", "port", "method", "attribute"],
      "samples": [{"labels": ["mlx5_0", "1", "GetTable", "PathRecord"], "value": 6},
                  {"labels": ["mlx5_0", "1", "Get", "ClassPortInfo"], "value": 4}]})"));
  EXPECT_EQ(j[4]["type"], "histogram");
  EXPECT_EQ(j[4]["samples"][0], nlohmann::json::parse(R"({"labels": ["mlx5_0", "1"],
      "bounds": [1e-5, 1e-4], "buckets": [3, 5, 2], "count": 10, "sum": 0.0012})"));
  EXPECT_EQ(j[3]["samples"], nlohmann::json::array());
}

TEST(Metrics, PrometheusTextEscapesLabelValuesAndHelp) {
  const std::string text = prometheus_text(demo_snapshot());
  for (const char* line : {
           "# HELP demo_info The daemon (value 1).\n",
           "# TYPE demo_info gauge\n",
           "demo_info{ca=\"mlx5_0\",port=\"1\",lid=\"7\"} 1\n",
           "demo_requests_total{ca=\"mlx5_0\",port=\"1\",method=\"GetTable\","
           "attribute=\"PathRecord\"} 6\n",
           "demo_levels_total{ca=\"mlx5_0\",port=\"1\",level=\"ISER \\\"gold\\\"\\\\silver\\n"
           "bronze\"} 2\n",
           "# HELP demo_answer_duration_seconds Time to an answer.\\nA second line, a \\\\ too.\n",
           "demo_answer_duration_seconds_bucket{ca=\"mlx5_0\",port=\"1\",le=\"0.0001\"} 8\n",
           "demo_answer_duration_seconds_bucket{ca=\"mlx5_0\",port=\"1\",le=\"+Inf\"} 10\n",
           "demo_answer_duration_seconds_sum{ca=\"mlx5_0\",port=\"1\"} 0.0012\n",
           "demo_answer_duration_seconds_count{ca=\"mlx5_0\",port=\"1\"} 10\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
}

// What the CLI does with a daemon's reply: the JSON form, serialized and read back, gives the
// text the snapshot gives.
TEST(Metrics, TheJsonFormReadBackGivesTheSameText) {
  const Snapshot s = demo_snapshot();
  const nlohmann::json wire = nlohmann::json::parse(to_json(s).dump());
  auto text = prometheus_text(wire);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, prometheus_text(s));
}

TEST(Metrics, NonFiniteValuesSurviveTheJsonForm) {
  const Table t("demo_", {}, {{"ratio", Type::kGauge, "A ratio."}});
  Snapshot s(t);
  s.add("ratio", {}, INFINITY);
  s.add("ratio", {}, std::nan(""));
  s.add("ratio", {}, 0.25);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j[0]["samples"][0]["value"], "+Inf");
  EXPECT_EQ(j[0]["samples"][1]["value"], "NaN");
  auto text = prometheus_text(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text,
            "# HELP demo_ratio A ratio.\n# TYPE demo_ratio gauge\ndemo_ratio +Inf\n"
            "demo_ratio NaN\ndemo_ratio 0.25\n");
}

TEST(Metrics, AMalformedOrMissingJsonFormIsRefused) {
  nlohmann::json good = to_json(demo_snapshot());
  EXPECT_FALSE(prometheus_text(nlohmann::json()).ok());
  EXPECT_FALSE(prometheus_text(nlohmann::json::object()).ok());
  auto broken = [&](auto change) {
    nlohmann::json j = good;
    change(j);
    return !prometheus_text(j).ok();
  };
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[0]["type"] = "summary"; }));
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[0]["name"] = "a b"; }));
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[1]["samples"][0]["labels"].erase(0); }));
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[1]["samples"][0]["value"] = "six"; }));
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[4]["samples"][0]["buckets"] = {1}; }));
  EXPECT_TRUE(broken([](nlohmann::json& j) { j[2].erase("help"); }));
  EXPECT_FALSE(broken([](nlohmann::json&) {}));
}

TEST(Metrics, PrometheusTextPassesPromtool) {
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  const std::string file = ::testing::TempDir() + "metrics-" + std::to_string(getpid()) + ".prom";
  std::ofstream(file) << prometheus_text(demo_snapshot());
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0);
  unlink(file.c_str());
}

}  // namespace
}  // namespace rdmaqos::common::metrics
