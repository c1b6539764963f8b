// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters and their Prometheus form: latency buckets by upper bound, reloads by
// result, every metric family from a fixed stats reply, and promtool's verdict on the text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "rdma-qos/kmod-shim/lsd_counters.h"
#include "rdma-qos/kmod-shim/lsd_prometheus.h"

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

nlohmann::json sample_stats() {
  return {{"uptime_seconds", 42},
          {"requests", {{"all", 5}, {"unidirectional", 1}, {"gmp", 0}, {"malformed", 2}}},
          {"answers", {{"path", 4}, {"f_err", {{"timeout", 1}, {"malformed", 2}}}}},
          {"paths_by_sl", {{"3", 4}}},
          {"latency",
           {{"bounds_seconds", {1e-3, 1e-2}},
            {"buckets", {1, 3, 1}},
            {"count", 5},
            {"sum_seconds", 2.5}}},
          {"reloads", {{"ok", 1}, {"failed", 0}}}};
}

TEST(LsdStats, PrometheusTextHasEveryFamily) {
  std::string text = lsd_prometheus_text(sample_stats());
  for (const char* line : {
           "# TYPE rdma_qos_lsd_requests_total counter\n",
           "rdma_qos_lsd_requests_total{kind=\"all\"} 5\n",
           "rdma_qos_lsd_requests_total{kind=\"malformed\"} 2\n",
           "rdma_qos_lsd_answers_total{status=\"path\",reason=\"\"} 4\n",
           "rdma_qos_lsd_answers_total{status=\"f_err\",reason=\"timeout\"} 1\n",
           "rdma_qos_lsd_paths_total{sl=\"3\"} 4\n",
           "# TYPE rdma_qos_lsd_answer_duration_seconds histogram\n",
           "rdma_qos_lsd_answer_duration_seconds_bucket{le=\"0.01\"} 4\n",
           "rdma_qos_lsd_answer_duration_seconds_bucket{le=\"+Inf\"} 5\n",
           "rdma_qos_lsd_answer_duration_seconds_sum 2.5\n",
           "rdma_qos_lsd_reloads_total{result=\"ok\"} 1\n",
           "rdma_qos_lsd_uptime_seconds 42\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
}

TEST(LsdStats, PrometheusTextPassesPromtool) {
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  for (const nlohmann::json& stats : {sample_stats(), LsdCounters().snapshot()}) {
    std::string file = ::testing::TempDir() + "lsd-" + std::to_string(getpid()) + ".prom";
    std::ofstream(file) << lsd_prometheus_text(stats);
    EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << stats.dump();
    unlink(file.c_str());
  }
}

}  // namespace
}  // namespace rdmaqos::kmod
