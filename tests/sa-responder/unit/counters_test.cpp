// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's counters: what `rdma-qos sad stats` reports after a known sequence of events, and
// rdma-qos-sad's metric table and the Prometheus text of its metrics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/counters.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

std::shared_ptr<const policy::CompiledPolicy> compile(const std::string& text) {
  auto r = policy::load_policy(text, nullptr);
  EXPECT_TRUE(r.policy) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
  return r.policy;
}

constexpr const char* kGoldPolicy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
    "qos-level\nname: GOLD\nsl: 5\nend-qos-level\nend-qos-levels\n"
    "qos-match-rules\nqos-match-rule\nqos-class: 7\nqos-level-name: GOLD\nend-qos-match-rule\n"
    "end-qos-match-rules\n";

TEST(SaCounters, CountsRequestsByMethodAndAttribute) {
  SaCounters c;
  c.request(sa::method::kGet, sa::attr::kPathRecord);
  c.request(sa::method::kGet, sa::attr::kPathRecord);
  c.request(sa::method::kGetTable, sa::attr::kPathRecord);
  c.request(sa::method::kGetMulti, sa::attr::kMultiPathRecord);
  c.request(0x02, 0x0011);
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.requests, 5u);
  EXPECT_EQ(s.methods.at("Get PathRecord"), 2u);
  EXPECT_EQ(s.methods.at("GetTable PathRecord"), 1u);
  EXPECT_EQ(s.methods.at("GetMulti MultiPathRecord"), 1u);
  EXPECT_EQ(s.methods.at("Set other"), 1u);
  EXPECT_EQ(s.methods.size(), 4u);
}

// Each answer's time lands in the first bucket whose bound it does not exceed.
TEST(SaCounters, LatencyLandsInItsHistogramBucket) {
  SaCounters c;
  c.latency(std::chrono::microseconds(3));    // <= 5 us: bucket 0
  c.latency(std::chrono::microseconds(5));    // exactly 5 us: bucket 0
  c.latency(std::chrono::microseconds(80));   // <= 100 us: bucket 4
  c.latency(std::chrono::milliseconds(1));    // <= 1 ms: bucket 7
  c.latency(std::chrono::milliseconds(500));  // beyond 100 ms: +Inf
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.latency.count, 5u);
  EXPECT_EQ(s.latency.buckets[0], 2u);
  EXPECT_EQ(s.latency.buckets[4], 1u);
  EXPECT_EQ(s.latency.buckets[7], 1u);
  EXPECT_EQ(s.latency.buckets[kLatencyBounds.size()], 1u);
  EXPECT_NEAR(s.latency.sum_seconds, 0.501088, 1e-9);
}

TEST(SaCounters, CountsResponsesByStatusName) {
  SaCounters c;
  c.response(0);
  c.response(0x0300);
  c.response(0x0300);
  c.response(0x000C);
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.responses, 4u);
  EXPECT_EQ(s.statuses.at("SUCCESS"), 1u);
  EXPECT_EQ(s.statuses.at("SA_NO_RECORDS"), 2u);
  EXPECT_EQ(s.statuses.at("INVALID_FIELD(METHOD_ATTR_UNSUPPORTED)"), 1u);
}

TEST(SaCounters, CountsPairsByLevelNameAndRejection) {
  SaCounters c;
  auto p = compile(kGoldPolicy);
  auto b = c.bind_policy(p.get());
  c.pair(*b, &p->rule_level(0), Rejection::kNone);
  c.pair(*b, &p->rule_level(0), Rejection::kSelector);
  c.pair(*b, &p->default_level(), Rejection::kNone);
  c.pair(*b, nullptr, Rejection::kNoCommonPkey);
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.levels.at("GOLD").records, 1u);
  EXPECT_EQ(s.levels.at("GOLD").rejected, 1u);
  EXPECT_EQ(s.levels.at("DEFAULT").records, 1u);
  EXPECT_EQ(s.levels.at("(no level)").rejected, 1u);
  EXPECT_EQ(s.rejections.at("selector"), 1u);
  EXPECT_EQ(s.rejections.at("no_common_pkey"), 1u);
}

TEST(SaCounters, LevelCountsSurviveAReloadThatKeepsTheName) {
  SaCounters c;
  auto first = compile(kGoldPolicy);
  auto b1 = c.bind_policy(first.get());
  c.pair(*b1, &first->rule_level(0), Rejection::kNone);
  auto second = compile(kGoldPolicy);
  auto b2 = c.bind_policy(second.get());
  c.pair(*b2, &second->rule_level(0), Rejection::kNone);
  EXPECT_EQ(c.snapshot().levels.at("GOLD").records, 2u);
}

TEST(SaCounters, ObserverCountsThroughThePolicysBinding) {
  SaCounters c;
  auto p = compile(kGoldPolicy);
  auto b = c.bind_policy(p.get());
  CountingObserver observer(c, *b);
  AnswerObserver& engine_side = observer;
  engine_side.pair(&p->rule_level(0), Rejection::kNone);
  EXPECT_EQ(c.snapshot().levels.at("GOLD").records, 1u);
}

TEST(SaCounters, DroppedSmKeyRequestsAreCountedApart) {
  SaCounters c;
  c.dropped_sm_key();
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.dropped_sm_key, 1u);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(to_json(s)["dropped"]["sm_key"], 1);
}

TEST(SaCounters, UnknownRequestersAreCountedAsDropped) {
  SaCounters c;
  c.dropped_unknown_requester();
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.dropped_unknown_requester, 1u);
  EXPECT_EQ(to_json(s)["dropped"]["unknown_requester"], 1);
}

TEST(SaCounters, PortErrorsAreCountedPerDirection) {
  SaCounters c;
  c.send_error();
  c.send_error();
  c.receive_error();
  nlohmann::json j = to_json(c.snapshot());
  EXPECT_EQ(j["mad_errors"]["send"], 2);
  EXPECT_EQ(j["mad_errors"]["receive"], 1);
  EXPECT_EQ(j["responses"], 0);
}

TEST(SaCounters, AnswersCutByABoundAndWorkersAreCounted) {
  SaCounters c;
  auto b = c.bind_policy(nullptr);
  CountingObserver observer(c, *b);
  AnswerObserver& engine_side = observer;
  engine_side.bounded(Bound::kRecords);
  engine_side.bounded(Bound::kTime);
  engine_side.bounded(Bound::kTime);
  c.deferred();
  c.deferred();
  c.busy();
  c.dropped_duplicate();
  CounterSnapshot s = c.snapshot();
  EXPECT_EQ(s.bounded_records, 1u);
  EXPECT_EQ(s.bounded_time, 2u);
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["bounded"]["records"], 1);
  EXPECT_EQ(j["bounded"]["time"], 2);
  EXPECT_EQ(j["workers"]["deferred"], 2);
  EXPECT_EQ(j["workers"]["busy"], 1);
  EXPECT_EQ(j["dropped"]["duplicate"], 1);
  SadFigures f;
  f.ca = "mlx5_0";
  f.port = 1;
  const common::metrics::Snapshot m = sad_metrics(s, f);
  EXPECT_TRUE(m.problems().empty()) << ::testing::PrintToString(m.problems());
  const std::string text = common::metrics::prometheus_text(m);
  for (const char* line : {
           "# TYPE rdma_qos_sad_bounded_total counter\n",
           "rdma_qos_sad_bounded_total{ca=\"mlx5_0\",port=\"1\",bound=\"records\"} 1\n",
           "rdma_qos_sad_bounded_total{ca=\"mlx5_0\",port=\"1\",bound=\"time\"} 2\n",
           "rdma_qos_sad_deferred_total{ca=\"mlx5_0\",port=\"1\"} 2\n",
           "rdma_qos_sad_busy_total{ca=\"mlx5_0\",port=\"1\"} 1\n",
           "rdma_qos_sad_dropped_total{ca=\"mlx5_0\",port=\"1\",reason=\"duplicate\"} 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(SadMetrics, TableIsSound) {
  EXPECT_TRUE(sad_metric_table().problems().empty())
      << ::testing::PrintToString(sad_metric_table().problems());
}

// Every family of the table, from counters that counted something of each kind and the daemon's
// own figures; the text passes promtool where it is installed.
TEST(SadMetrics, EveryFamilyFromCountersAndFigures) {
  SaCounters c;
  auto policy = compile(kGoldPolicy);
  auto b = c.bind_policy(policy.get());
  c.request(sa::method::kGetTable, sa::attr::kPathRecord);
  c.response(0);
  c.pair(*b, &policy->default_level(), Rejection::kNone);
  c.pair(*b, &policy->default_level(), Rejection::kSelector);
  c.latency(std::chrono::microseconds(50));
  SadFigures f{"mlx5_0", 1, 7, 5, 3, 2, 4, 1, 12, 6, 0, 4, {{65, 2}}};
  const common::metrics::Snapshot m = sad_metrics(c.snapshot(), f);
  EXPECT_TRUE(m.problems().empty()) << ::testing::PrintToString(m.problems());
  for (const auto& family : m.families()) EXPECT_FALSE(family.samples.empty()) << family.name;
  const std::string text = common::metrics::prometheus_text(m);
  for (const char* line : {
           "rdma_qos_sad_info{ca=\"mlx5_0\",port=\"1\",lid=\"7\"} 1\n",
           "rdma_qos_sad_uptime_seconds{ca=\"mlx5_0\",port=\"1\"} 5\n",
           "rdma_qos_sad_requests_total{ca=\"mlx5_0\",port=\"1\",method=\"GetTable\","
           "attribute=\"PathRecord\"} 1\n",
           "rdma_qos_sad_responses_total{ca=\"mlx5_0\",port=\"1\",status=\"SUCCESS\"} 1\n",
           "rdma_qos_sad_dropped_total{ca=\"mlx5_0\",port=\"1\",reason=\"undecodable\"} 3\n",
           "rdma_qos_sad_pairs_total{ca=\"mlx5_0\",port=\"1\",level=\"DEFAULT\","
           "result=\"rejected\"} 1\n",
           "rdma_qos_sad_rejections_total{ca=\"mlx5_0\",port=\"1\",reason=\"selector\"} 1\n",
           "rdma_qos_sad_answer_duration_seconds_bucket{ca=\"mlx5_0\",port=\"1\",le=\"5e-05\"} "
           "1\n",
           "rdma_qos_sad_policy_rules{ca=\"mlx5_0\",port=\"1\"} 2\n",
           "rdma_qos_sad_reloads_total{ca=\"mlx5_0\",port=\"1\",result=\"failed\"} 1\n",
           "rdma_qos_sad_fabric_endpoints{ca=\"mlx5_0\",port=\"1\"} 12\n",
           "rdma_qos_sad_discoveries_total{ca=\"mlx5_0\",port=\"1\",result=\"ok\"} 6\n",
           "rdma_qos_sad_sm_traps_subscribed{ca=\"mlx5_0\",port=\"1\"} 4\n",
           "rdma_qos_sad_sm_trap_reports_total{ca=\"mlx5_0\",port=\"1\",trap=\"65\"} 2\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  const std::string file = ::testing::TempDir() + "sad-" + std::to_string(getpid()) + ".prom";
  std::ofstream(file) << text;
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << text;
  unlink(file.c_str());
}

}  // namespace
}  // namespace rdmaqos::sad
