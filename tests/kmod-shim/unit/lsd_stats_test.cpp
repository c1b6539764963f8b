// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters and their Prometheus form: latency buckets by upper bound, reloads by
// result, the metric table's checks, every metric family from counters that counted each event,
// and promtool's verdict on the text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "rdma-qos/kmod-shim/lsd_counters.h"
#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;

TEST(LsdStats, LatencyFallsInTheFirstBucketWhoseBoundHoldsIt) {
  LsdCounters c;
  c.latency(1ms);     // exactly the 1e-3 bound: that bucket (Prometheus' le)
  c.latency(1100us);  // the next one, 2.5e-3
  c.latency(3s);      // past 2.5 s: +Inf
  nlohmann::json l = c.snapshot()["latency"];
  std::vector<uint64_t> buckets = l["buckets"];
  ASSERT_EQ(buckets.size(), kLsdLatencyBounds.size() + 1);
  EXPECT_EQ(buckets[3], 1u);
  EXPECT_EQ(buckets[4], 1u);
  EXPECT_EQ(buckets.back(), 1u);
  EXPECT_EQ(l["count"], 3);
  EXPECT_NEAR(l["sum_seconds"].get<double>(), 3.0021, 1e-9);
}

TEST(LsdStats, ReloadsAreCountedByResult) {
  LsdCounters c;
  c.reload(true);
  c.reload(true);
  c.reload(false);
  EXPECT_EQ(c.snapshot()["reloads"], nlohmann::json({{"ok", 2}, {"failed", 1}}));
}

TEST(LsdStats, EveryFailReasonIsListedEvenAtZero) {
  LsdCounters c;
  c.failed(FailReason::kTimeout);
  nlohmann::json f = c.snapshot()["answers"]["f_err"];
  EXPECT_EQ(f, nlohmann::json({{"malformed", 0},
                               {"sa_error", 0},
                               {"no_path", 0},
                               {"timeout", 1},
                               {"unencodable", 0},
                               {"shutdown", 0}}));
}

// Counters after a few of each event: five requests for all paths, one unidirectional, two
// malformed; four paths on SL 3, F_ERR for a timeout and two malformed requests; one reload.
// The path service: three PathRecord questions from two connections, two joining the first,
// one SA request, two answers and a timeout; a cache hit; a refused connection.
LsdCounters& busy(LsdCounters& c) {
  for (int i = 0; i < 5; ++i) c.request(PathUse::kAll);
  c.request(PathUse::kUnidirectional);
  c.request(std::nullopt);
  c.request(std::nullopt);
  for (int i = 0; i < 4; ++i) c.answered(3);
  c.failed(FailReason::kTimeout);
  c.failed(FailReason::kMalformed);
  c.failed(FailReason::kMalformed);
  c.latency(5ms);  // the 5e-3 bucket
  c.latency(2ms);  // the 2.5e-3 bucket
  c.latency(3s);   // +Inf
  c.reload(true);
  for (int i = 0; i < 3; ++i) c.path_question(sa::path_service::Op::kPathRecord);
  c.path_joined();
  c.path_joined();
  c.path_sa_request(sa::attr::kPathRecord);
  c.path_answer(std::nullopt);
  c.path_answer(std::nullopt);
  c.path_answer(ErrorCode::kTimeout);
  c.path_cache_hit();
  c.path_connection(true);
  c.path_connection(true);
  c.path_connection(false);
  c.path_connection_closed();
  return c;
}

TEST(LsdStats, PathServiceCountersAreInTheSnapshot) {
  LsdCounters c;
  nlohmann::json p = busy(c).snapshot()["path_service"];
  EXPECT_EQ(
      p["questions"],
      nlohmann::json(
          {{"class_port_info", 0}, {"path_record", 3}, {"multipath_record", 0}, {"malformed", 0}}));
  EXPECT_EQ(p["answers"]["answered"], 2);
  EXPECT_EQ(p["answers"]["failed"]["timeout"], 1);
  EXPECT_EQ(p["cache_hits"], 1);
  EXPECT_EQ(p["joined"], 2);
  EXPECT_EQ(p["sa_requests"]["path_record"], 1);
  EXPECT_EQ(p["connections"], nlohmann::json({{"open", 1}, {"accepted", 2}, {"refused", 1}}));
}

TEST(LsdStats, MetricTableIsSound) {
  EXPECT_TRUE(lsd_metric_table().problems().empty())
      << ::testing::PrintToString(lsd_metric_table().problems());
  LsdCounters c;
  EXPECT_TRUE(busy(c).metrics().problems().empty())
      << ::testing::PrintToString(c.metrics().problems());
}

TEST(LsdStats, PrometheusTextHasEveryFamily) {
  LsdCounters c;
  auto text = common::metrics::prometheus_text(busy(c).snapshot()["metrics"]);
  ASSERT_TRUE(text.ok()) << text.error().message;
  for (const char* line : {
           "# TYPE rdma_qos_lsd_requests_total counter\n",
           "rdma_qos_lsd_requests_total{kind=\"all\"} 5\n",
           "rdma_qos_lsd_requests_total{kind=\"malformed\"} 2\n",
           "rdma_qos_lsd_answers_total{status=\"path\",reason=\"\"} 4\n",
           "rdma_qos_lsd_answers_total{status=\"f_err\",reason=\"timeout\"} 1\n",
           "rdma_qos_lsd_answers_total{status=\"f_err\",reason=\"malformed\"} 2\n",
           "rdma_qos_lsd_paths_total{sl=\"3\"} 4\n",
           "# TYPE rdma_qos_lsd_answer_duration_seconds histogram\n",
           "rdma_qos_lsd_answer_duration_seconds_bucket{le=\"0.0025\"} 1\n",
           "rdma_qos_lsd_answer_duration_seconds_bucket{le=\"0.01\"} 2\n",
           "rdma_qos_lsd_answer_duration_seconds_bucket{le=\"+Inf\"} 3\n",
           "rdma_qos_lsd_answer_duration_seconds_sum 3.007\n",
           "rdma_qos_lsd_answer_duration_seconds_count 3\n",
           "rdma_qos_lsd_reloads_total{result=\"ok\"} 1\n",
           "rdma_qos_lsd_reloads_total{result=\"failed\"} 0\n",
           "rdma_qos_lsd_uptime_seconds 0\n",
           "rdma_qos_lsd_path_questions_total{op=\"path_record\"} 3\n",
           "rdma_qos_lsd_path_answers_total{status=\"answered\",code=\"\"} 2\n",
           "rdma_qos_lsd_path_answers_total{status=\"failed\",code=\"timeout\"} 1\n",
           "rdma_qos_lsd_path_cache_hits_total 1\n",
           "rdma_qos_lsd_path_joined_total 2\n",
           "rdma_qos_lsd_path_sa_requests_total{attribute=\"path_record\"} 1\n",
           "rdma_qos_lsd_path_connections_total{result=\"refused\"} 1\n",
           "# TYPE rdma_qos_lsd_path_connections gauge\n",
           "rdma_qos_lsd_path_connections 1\n",
       })
    EXPECT_NE(text->find(line), std::string::npos) << line << "in\n" << *text;
}

TEST(LsdStats, PrometheusTextPassesPromtool) {
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  LsdCounters idle, answered;
  busy(answered);
  for (const LsdCounters* c : {&idle, &answered}) {
    std::string file = ::testing::TempDir() + "lsd-" + std::to_string(getpid()) + ".prom";
    std::ofstream(file) << common::metrics::prometheus_text(c->metrics());
    EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0);
    unlink(file.c_str());
  }
}

}  // namespace
}  // namespace rdmaqos::kmod
