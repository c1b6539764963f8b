// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos sad`: what it prints and how it exits for the replies a daemon gives, against a
// control server of our own that answers with canned replies and records the requests.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/counters.h"

namespace rdmaqos::cli {
namespace {

struct CommandRun {
  int status = -1;
  std::string output;
};

// Runs the command through the shell, stdout and stderr together.
CommandRun run(const std::string& command) {
  CommandRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) r.output.append(buf, n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class SadCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdma-qos-cli-sad-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/sad.sock";
  }
  void TearDown() override {
    done_ = true;
    if (server_thread_.joinable()) server_thread_.join();
    std::filesystem::remove_all(dir_);
  }

  // A daemon that answers every request with `reply`.
  void serve(nlohmann::json reply) {
    auto server = sad::ControlServer::open(socket_);
    ASSERT_TRUE(server) << server.error().message;
    server_thread_ = std::thread([this, reply, s = std::move(*server)]() mutable {
      while (!done_) {
        std::vector<pollfd> fds;
        s->add_poll_fds(fds);
        if (poll(fds.data(), fds.size(), 20) <= 0) continue;
        for (auto& r : s->process(fds)) {
          commands_.push_back(r.body["command"].get<std::string>());
          s->reply(r.connection, reply);
        }
      }
    });
  }

  CommandRun sad(const std::string& args) const {
    return run(std::string(RDMA_QOS_CLI) + " sad " + args + " --socket " + socket_);
  }

  std::string dir_, socket_;
  std::atomic<bool> done_{false};
  std::thread server_thread_;
  std::vector<std::string> commands_;
};

TEST_F(SadCommand, RefusedReloadPrintsEveryDiagnosticAndExitsOne) {
  serve({{"ok", false},
         {"message", "policy reload failed: the previous policy stays in force"},
         {"diagnostics", {"p.conf:3:5: error: unknown level 'NOPE'", "p.conf:9:1: warning: x"}}});
  CommandRun r = sad("reload");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("p.conf:3:5: error: unknown level 'NOPE'"), std::string::npos);
  EXPECT_NE(r.output.find("p.conf:9:1: warning: x"), std::string::npos);
  EXPECT_NE(r.output.find("previous policy stays"), std::string::npos);
  done_ = true;
  server_thread_.join();
  EXPECT_EQ(commands_, std::vector<std::string>{"reload"});
}

// A reply in another form (here "ok" a number, as another version might send) is an error
// that says so, exit status 2, never an abort.
TEST_F(SadCommand, AReplyOfAnotherFormExitsTwoAndSaysSo) {
  serve({{"ok", 1}, {"message", 7}});
  CommandRun r = sad("reload");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("not in the form this command reads"), std::string::npos) << r.output;
}

TEST_F(SadCommand, AcceptedReloadExitsZero) {
  serve({{"ok", true}, {"message", "policy reloaded"}, {"diagnostics", nlohmann::json::array()}});
  CommandRun r = sad("reload");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("policy reloaded"), std::string::npos);
}

TEST_F(SadCommand, JsonPrintsTheDaemonsReply) {
  serve({{"ok", true}, {"message", "fabric re-discovered: 12 endpoints"}});
  CommandRun r = sad("rediscover --json");
  EXPECT_EQ(r.status, 0) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["message"], "fabric re-discovered: 12 endpoints");
}

TEST_F(SadCommand, StatsInHumanFormNamesLevelsAndStatuses) {
  nlohmann::json stats = {
      {"sa", {{"ca", "mlx5_0"}, {"port", 1}, {"lid", 1}, {"uptime_seconds", 5}}},
      {"policy",
       {{"file", "/etc/opensm/qos-policy.conf"},
        {"rules", 3},
        {"reloads", 2},
        {"reload_failures", 1}}},
      {"fabric",
       {{"endpoints", 12},
        {"discoveries", 1},
        {"discovery_failures", 0},
        {"last_discovery", "2026-11-22T00:00:00Z"},
        {"discovering", false}}},
      {"requests", 10},
      {"responses", 9},
      {"dropped", {{"sm_key", 1}, {"unknown_requester", 4}, {"undecodable", 0}}},
      {"mad_errors", {{"receive", 0}, {"send", 2}}},
      {"methods", {{"GetTable PathRecord", 10}}},
      {"statuses", {{"SUCCESS", 8}, {"SA_NO_RECORDS", 1}}},
      {"levels", {{"ISER", {{"records", 7}, {"rejected", 2}}}}},
      {"rejections", {{"selector", 2}}}};
  serve({{"ok", true}, {"stats", stats}});
  CommandRun r = sad("stats");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* s :
       {"mlx5_0", "GetTable PathRecord", "SA_NO_RECORDS", "ISER", "selector",
        "/etc/opensm/qos-policy.conf", "12 endpoints", "unknown requester 4", "receive 0, send 2"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " in\n" << r.output;
  CommandRun j = sad("stats --json");
  auto parsed = nlohmann::json::parse(j.output, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.output;
  EXPECT_EQ(parsed, stats);
}

// The OpenSM plugin's control socket answers `stats` with the same counters but a "plugin"
// object instead of "sa" and fabric models instead of discoveries (rdma-qos-opensm(8)).
TEST_F(SadCommand, StatsInHumanFormReadThePluginsReplyToo) {
  nlohmann::json stats = {
      {"plugin", {{"pid", 4242}, {"answering", true}, {"fallbacks", 3}, {"uptime_seconds", 9}}},
      {"policy", {{"file", nullptr}, {"rules", 0}, {"reloads", 0}, {"reload_failures", 0}}},
      {"fabric", {{"endpoints", 8}, {"models", 2}, {"model_failures", 0}}},
      {"requests", 4},
      {"methods", {{"Get PathRecord", 4}}}};
  serve({{"ok", true}, {"stats", stats}});
  CommandRun r = sad("stats");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* s : {"OpenSM plugin in pid 4242, answering, 3 queries left to OpenSM",
                        "policy: (none)", "8 endpoints, 2 models", "Get PathRecord"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " in\n" << r.output;
}

TEST_F(SadCommand, NoDaemonExitsTwoAndSaysWhere) {
  CommandRun r = sad("stats");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(socket_), std::string::npos) << r.output;
}

// The metrics member a daemon with these counters sends (rdma-qos-sad's table).
nlohmann::json daemon_metrics() {
  sad::CounterSnapshot c;
  c.dropped_sm_key = 1;
  c.methods = {{"GetTable PathRecord", 6}, {"Get ClassPortInfo", 4}};
  c.statuses = {{"SUCCESS", 8}, {"SA_NO_RECORDS", 1}};
  c.levels = {{"ISER \"gold\"", {7, 2}}};
  c.rejections = {{"selector", 2}};
  c.latency.buckets[1] = 3;  // up to 1e-5 s
  c.latency.buckets[4] = 5;  // up to 1e-4 s
  c.latency.buckets.back() = 2;
  c.latency.count = 10;
  c.latency.sum_seconds = 0.0012;
  sad::SadFigures f{"mlx5_0", 1, 7, 5, 0, 3, 2, 1, 12, 1, 0, 4, {}};
  return common::metrics::to_json(sad::sad_metrics(c, f));
}

// The Prometheus form, rendered from the stats' metrics member: one family per counter,
// labelled with the daemon's port, the latency as a cumulative histogram; promtool (Prometheus'
// own checker) accepts it where it is installed.
TEST_F(SadCommand, StatsInPrometheusFormatPassPromtool) {
  nlohmann::json stats = {
      {"sa", {{"ca", "mlx5_0"}, {"port", 1}, {"lid", 7}, {"uptime_seconds", 5}}},
      {"policy",
       {{"file", "/etc/rdma/qos-policy.conf"},
        {"rules", 3},
        {"reloads", 2},
        {"reload_failures", 1}}},
      {"fabric", {{"endpoints", 12}, {"discoveries", 1}, {"discovery_failures", 0}}},
      {"requests", 10},
      {"responses", 9},
      {"dropped", {{"sm_key", 1}, {"undecodable", 0}}},
      {"methods", {{"GetTable PathRecord", 6}, {"Get ClassPortInfo", 4}}},
      {"statuses", {{"SUCCESS", 8}, {"SA_NO_RECORDS", 1}}},
      {"levels", {{"ISER \"gold\"", {{"records", 7}, {"rejected", 2}}}}},
      {"rejections", {{"selector", 2}}},
      {"latency",
       {{"bounds_seconds", {1e-5, 1e-4}},
        {"buckets", {3, 5, 2}},
        {"count", 10},
        {"sum_seconds", 0.0012}}},
      {"metrics", daemon_metrics()}};
  serve({{"ok", true}, {"stats", stats}});
  CommandRun r = sad("stats --format prometheus");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* line : {
           "# TYPE rdma_qos_sad_requests_total counter\n",
           "rdma_qos_sad_requests_total{ca=\"mlx5_0\",port=\"1\",method=\"GetTable\","
           "attribute=\"PathRecord\"} 6\n",
           "rdma_qos_sad_responses_total{ca=\"mlx5_0\",port=\"1\",status=\"SA_NO_RECORDS\"} 1\n",
           "rdma_qos_sad_pairs_total{ca=\"mlx5_0\",port=\"1\",level=\"ISER \\\"gold\\\"\","
           "result=\"rejected\"} 2\n",
           "# TYPE rdma_qos_sad_answer_duration_seconds histogram\n",
           "rdma_qos_sad_answer_duration_seconds_bucket{ca=\"mlx5_0\",port=\"1\",le=\"0.0001\"} "
           "8\n",
           "rdma_qos_sad_answer_duration_seconds_bucket{ca=\"mlx5_0\",port=\"1\",le=\"+Inf\"} 10\n",
           "rdma_qos_sad_answer_duration_seconds_count{ca=\"mlx5_0\",port=\"1\"} 10\n",
           "rdma_qos_sad_reloads_total{ca=\"mlx5_0\",port=\"1\",result=\"failed\"} 1\n",
       })
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "in\n" << r.output;
  if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
  CommandRun check = run(std::string(RDMA_QOS_CLI) + " sad stats --format prometheus --socket " +
                         socket_ + " | promtool check metrics");
  EXPECT_EQ(check.status, 0) << check.output;
}

// A daemon older than the metrics member: the command says so and fails, instead of printing an
// empty exposition.
TEST_F(SadCommand, StatsWithoutMetricsCannotBePrometheus) {
  serve({{"ok", true}, {"stats", {{"requests", 10}}}});
  CommandRun r = sad("stats --format prometheus");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("rdma-qos sad stats: metrics:"), std::string::npos) << r.output;
}

TEST_F(SadCommand, EnvironmentNamesTheSocket) {
  serve({{"ok", true}, {"message", "policy reloaded"}});
  CommandRun r = run("RDMA_QOS_SAD_SOCKET=" + socket_ + " " + RDMA_QOS_CLI + " sad reload");
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace rdmaqos::cli
