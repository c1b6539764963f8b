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
  return c;
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
