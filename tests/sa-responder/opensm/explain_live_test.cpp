// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Explain, live, on ibsim: `rdma-qos sad explain` asks a running rdma-qos-sad (or, built with
// RDMA_QOS_EXPLAIN_PLUGIN, `rdma-qos opensm-plugin explain` asks OpenSM with the plugin) about
// concrete queries, and gets the rule (file:line), the level, the answer, and why a path got no
// record: an SL that OpenSM's switch tables send to VL 15 (at which hop), no shared partition,
// a requested SL the level does not give; exit 0 answered, 1 no record, 2 could not ask.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace {

using namespace std::chrono_literals;
using rdmaqos::testbed::IbFabric;
using rdmaqos::testbed::RunResult;

// OpenSM's switch external ports send SL 7 to VL 15; SL 1 and 0 pass everywhere.
constexpr const char* kConf =
    "qos TRUE\n"
    "qos_ca_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7\n"
    "qos_sw0_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7\n"
    "qos_swe_sl2vl 0,1,2,3,4,5,6,15,0,1,2,3,4,5,6,7\n";

// Iso holds node001 and node002 only.
constexpr const char* kPartitions =
    "Default=0x7fff, ipoib : ALL=full;\n"
    "Iso=0x22 : 0x0002c90300a00011=full, 0x0002c90300a00021=full;\n";

// Line 13: the rule for service ID 0x1 (level FAST, line 6); line 17: the rule for 0x7 (SEVEN).
constexpr const char* kPolicy =
    "qos-levels\n"                 // 1
    "  qos-level\n"                // 2
    "    name: DEFAULT\n"          // 3
    "    sl: 0\n"                  // 4
    "  end-qos-level\n"            // 5
    "  qos-level\n"                // 6
    "    name: FAST\n"             // 7
    "    sl: 1\n"                  // 8
    "  end-qos-level\n"            // 9
    "  qos-level\n"                // 10
    "    name: SEVEN\n"            // 11
    "    sl: 7\n"                  // 12
    "  end-qos-level\n"            // 13
    "end-qos-levels\n"             // 14
    "qos-match-rules\n"            // 15
    "  qos-match-rule\n"           // 16
    "    use: fast lane\n"         // 17
    "    service-id: 0x1\n"        // 18
    "    qos-level-name: FAST\n"   // 19
    "  end-qos-match-rule\n"       // 20
    "  qos-match-rule\n"           // 21
    "    service-id: 0x7\n"        // 22
    "    qos-level-name: SEVEN\n"  // 23
    "  end-qos-match-rule\n"       // 24
    "end-qos-match-rules\n";       // 25

class ExplainLive : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rdmaqos::testbed::IbFabricOptions o;
    o.policy = kPolicy;
    o.partitions = kPartitions;
    o.opensm_conf = kConf;
#ifdef RDMA_QOS_EXPLAIN_PLUGIN
    o.opensm_conf +=
        "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
        "event_plugin_options control-socket=@DIR@/plugin.sock\n";
    o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
    fabric_ = new IbFabric(o);
    socket_ = new std::string(fabric_->dir() + "/plugin.sock");
    for (int i = 0; i < 300 && !answering(); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(answering()) << fabric_->opensm_log();
#else
    fabric_ = new IbFabric(o);
    fabric_->stop_sm();
    const std::string dir = fabric_->dir();
    std::ofstream(dir + "/sad-policy.conf") << kPolicy;
    std::ofstream(dir + "/sad-partitions.conf") << kPartitions;
    std::ofstream(dir + "/sad-opensm.conf") << kConf;
    socket_ = new std::string(dir + "/sad.sock");
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD,
              "--foreground",
              "--policy",
              dir + "/sad-policy.conf",
              "--partitions",
              dir + "/sad-partitions.conf",
              "--opensm-conf",
              dir + "/sad-opensm.conf",
              "--control-socket",
              *socket_,
              "--rediscover-interval",
              "0"};
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    p.cwd = dir;
    p.output_path = dir + "/sad.log";
    auto started = fabric_->start_until_answering(p, {"saquery", "-c"});
    sad_ = started.daemon.release();
    ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
#endif
  }

  static void TearDownTestSuite() {
    delete sad_;
    delete fabric_;
    delete socket_;
    sad_ = nullptr;
    fabric_ = nullptr;
  }

#ifdef RDMA_QOS_EXPLAIN_PLUGIN
  static bool answering() {
    return fabric_->opensm_log().find("rdma-qos plugin: answering") != std::string::npos;
  }
  static constexpr const char* kFront = "opensm-plugin";
  static constexpr const char* kPolicyFile = "qos-policy.conf";
#else
  static constexpr const char* kFront = "sad";
  static constexpr const char* kPolicyFile = "sad-policy.conf";
#endif

  static std::string lid(const std::string& node) {
    return fabric_->lid_arg(node);
  }

  // `rdma-qos FRONT explain --socket S ARGS...`
  static RunResult explain(std::vector<std::string> args) {
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, kFront, "explain", "--socket", *socket_};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    return rdmaqos::testbed::run(p, 60s);
  }
  static nlohmann::json explain_json(std::vector<std::string> args, int expected_exit) {
    args.push_back("--json");
    RunResult r = explain(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.output;
    nlohmann::json j;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] == '{') j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.output;
    return j.is_object() ? j : nlohmann::json::object();
  }

  static inline IbFabric* fabric_ = nullptr;
  static inline rdmaqos::testbed::Process* sad_ = nullptr;
  static inline std::string* socket_ = nullptr;
};

TEST_F(ExplainLive, AnAnsweredQueryShowsTheRuleTheLevelAndTheRecord) {
  auto e =
      explain_json({"--slid", lid("node001"), "--dlid", lid("node005"), "--service-id", "0x1"}, 0);
  EXPECT_TRUE(e.value("answered", false));
  EXPECT_EQ(e["rule"].value("location", ""), fmt::format("{}/{}:16", fabric_->dir(), kPolicyFile));
  EXPECT_EQ(e["rule"].value("use", ""), "fast lane");
  EXPECT_EQ(e["level"].value("name", ""), "FAST");
  ASSERT_EQ(e["records"].size(), 1u);
  EXPECT_EQ(e["records"][0].value("sl", -1), 1);
  EXPECT_EQ(e["records"][0].value("dlid", 0), fabric_->lid("node005"));
}

TEST_F(ExplainLive, TextShowsTheRuleAndTheLevel) {
  RunResult r = explain({"--slid", lid("node001"), "--dlid", lid("node002"), "--service-id", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rule:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string(kPolicyFile) + ":16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("level:       FAST"), std::string::npos) << r.output;
}

// OpenSM sent SL 7 to VL 15 on every switch external port: the first switch is named.
TEST_F(ExplainLive, AnSlOnVl15NamesTheHop) {
  auto e =
      explain_json({"--slid", lid("node001"), "--dlid", lid("node005"), "--service-id", "7"}, 1);
  EXPECT_FALSE(e.value("answered", true));
  EXPECT_EQ(e["level"].value("name", ""), "SEVEN");
  ASSERT_FALSE(e["no_record"].empty()) << e.dump();
  EXPECT_EQ(e["no_record"][0].value("reason", ""), "level_sl_dropped");
  EXPECT_NE(e["no_record"][0].value("detail", "").find("SL 7 maps to VL 15 at switch 'leaf01"),
            std::string::npos)
      << e.dump();
}

TEST_F(ExplainLive, NoSharedPartitionIsNamed) {
  auto e = explain_json({"--slid", lid("node001"), "--dlid", lid("node003"), "--pkey", "0x22"}, 1);
  ASSERT_FALSE(e["no_record"].empty()) << e.dump();
  EXPECT_EQ(e["no_record"][0].value("reason", ""), "pkey_not_shared");
  // The partition's members do share it.
  explain_json({"--slid", lid("node001"), "--dlid", lid("node002"), "--pkey", "0x22"}, 0);
}

TEST_F(ExplainLive, ARequestedSlTheLevelDoesNotGiveIsNamed) {
  auto e = explain_json(
      {"--slid", lid("node001"), "--dlid", lid("node002"), "--service-id", "1", "--sl", "3"}, 1);
  ASSERT_FALSE(e["no_record"].empty()) << e.dump();
  EXPECT_EQ(e["no_record"][0].value("reason", ""), "sl_not_level");
}

// node001 (40 Gb/s) to node002 (20 Gb/s, rate code 6): faster than that cannot be met.
TEST_F(ExplainLive, ASelectorThatCannotBeMetIsNamed) {
  auto e = explain_json({"--slid", lid("node001"), "--dlid", lid("node002"), "--rate", ">6"}, 1);
  ASSERT_FALSE(e["no_record"].empty()) << e.dump();
  EXPECT_EQ(e["no_record"][0].value("reason", ""), "selector");
  explain_json({"--slid", lid("node001"), "--dlid", lid("node002"), "--rate", "<7"}, 0);
}

TEST_F(ExplainLive, AnUnknownPortOrNoSaCannotBeAsked) {
  RunResult r = explain({"--slid", lid("node001"), "--dlid", "999"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("LID 999"), std::string::npos) << r.output;
  rdmaqos::testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, kFront, "explain", "--socket", fabric_->dir() + "/nobody.sock",
            "--slid",     "1",    "--dlid",  "2"};
  EXPECT_EQ(rdmaqos::testbed::run(p, 60s).exit_code, 2);
}

}  // namespace
