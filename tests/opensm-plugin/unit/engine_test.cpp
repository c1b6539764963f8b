// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's engine on the tiny subnet: it answers PathRecord with the policy once a model is
// in force, leaves the query to OpenSM before that or when the policy is bad, and keeps the
// previous policy when a reload fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-client/path_record.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

std::string policy_with_sl(int sl) {
  return "qos-levels\nqos-level\nname: DEFAULT\nsl: " + std::to_string(sl) +
         "\nend-qos-level\nend-qos-levels\n";
}

// A SubnAdmGet(PathRecord) from LID `slid` to LID `dlid`.
std::vector<uint8_t> get_path(uint16_t slid, uint16_t dlid, uint64_t tid) {
  sa::PathRecord q;
  q.slid = slid;
  q.dlid = dlid;
  sa::SaMad m;
  m.mad.method = sa::method::kGet;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = tid;
  m.sa.comp_mask = sa::pr_mask::kSlid | sa::pr_mask::kDlid;
  auto bytes = sa::encode_path_record(q);
  m.data.assign(bytes->begin(), bytes->end());
  return sa::encode_sa_mad(m);
}

class EngineTest : public ::testing::Test {
 protected:
  // One file per test: ctest runs the tests of this fixture in parallel processes.
  std::string policy_path = ::testing::TempDir() + "/engine-test-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                            ".conf";
  std::vector<std::string> log;

  void write_policy(const std::string& text) { std::ofstream(policy_path) << text; }
  void TearDown() override { std::remove(policy_path.c_str()); }

  // What the fake OpenSM reports: host B's port count, the routing engine, and its path SLs
  // (the hints it was given are kept).
  uint8_t b_ports = 1;
  bool b_pkeys = true;
  uint8_t b_state = testing::kActive, s2_state = testing::kActive;
  std::vector<std::pair<uint64_t, uint64_t>> aliases;  // port GUID, alias GUID
  sad::RoutingFacts routing;
  std::function<int(uint8_t)> path_sl;
  std::vector<uint8_t> hints;

  std::unique_ptr<Engine> engine(const std::function<void(Options&)>& tweak = {},
                                 OsmConfig osm = {}) {
    Options o;
    o.policy = policy_path;
    o.control_socket = "";
    if (tweak) tweak(o);
    return std::make_unique<Engine>(
        o, osm, [this](bool, const std::string& line) { log.push_back(line); },
        [this](FabricBuilder& b) {
          testing::feed_tiny_subnet(b, b_ports, b_pkeys, b_state, s2_state);
          b.routing(routing);
          for (auto [port, alias] : aliases) b.alias(port, alias);
          return true;
        },
        [this](uint8_t hint, uint16_t, uint16_t) {
          hints.push_back(hint);
          return path_sl ? path_sl(hint) : -1;
        });
  }

  // A SubnAdmGet(PathRecord) from A (LID 2) to B (LID 3).
  static std::vector<uint8_t> get_a_to_b() { return get_path(2, 3, 0x77); }

  // A SubnAdmGetTable(PathRecord) from A naming no end: every path of the subnet.
  static std::vector<uint8_t> open_table() {
    sa::SaMad m;
    m.mad.method = sa::method::kGetTable;
    m.mad.attr_id = sa::attr::kPathRecord;
    m.mad.tid = 0x78;
    auto bytes = sa::encode_path_record(sa::PathRecord{});
    m.data.assign(bytes->begin(), bytes->end());
    return sa::encode_sa_mad(m);
  }

  // The engine's answer to `request` from A (LID 2); nullopt when it did not answer.
  static std::optional<sa::SaMad> answer_of(Engine& e, const std::vector<uint8_t>& request) {
    std::vector<uint8_t> sent;
    auto outcome =
        e.answer(request, 2, [&](std::span<const uint8_t> b) { sent.assign(b.begin(), b.end()); });
    if (outcome != Engine::Outcome::kAnswered) return std::nullopt;
    auto mad = sa::decode_sa_mad(sent);
    if (!mad) return std::nullopt;
    return *mad;
  }

  // The SL of the answer to get_a_to_b(), or -1 when the engine did not answer.
  static int answered_sl(Engine& e) {
    std::vector<uint8_t> sent;
    auto outcome = e.answer(get_a_to_b(), 2,
                            [&](std::span<const uint8_t> b) { sent.assign(b.begin(), b.end()); });
    if (outcome != Engine::Outcome::kAnswered) return -1;
    auto mad = sa::decode_sa_mad(sent);
    if (!mad || mad->mad.status != 0) return -2;
    auto record = sa::decode_path_record(mad->data);
    return record ? record->sl : -3;
  }
};

TEST_F(EngineTest, OpenSmAnswersUntilTheFirstModel) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  EXPECT_FALSE(e->ready());
  std::vector<uint8_t> bytes = get_a_to_b();
  EXPECT_EQ(e->answer(bytes, 2, [](std::span<const uint8_t>) {}), Engine::Outcome::kFallback);
}

TEST_F(EngineTest, AnswersWithThePolicyOnceTheModelIsIn) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_TRUE(e->ready());
  EXPECT_EQ(answered_sl(*e), 4);
}

TEST_F(EngineTest, ABadPolicyAtStartLeavesOpenSmAnsweringAndSaysWhere) {
  write_policy("qos-levels\nqos-level\nname: DEFAULT\nsl: 99\nend-qos-level\nend-qos-levels\n");
  auto e = engine();
  EXPECT_FALSE(e->rebuild());
  EXPECT_FALSE(e->ready());
  EXPECT_EQ(answered_sl(*e), -1);
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[0].rfind(policy_path + ":4:", 0), 0u) << log[0];
  EXPECT_EQ(log.back(),
            "the policy or partitions have errors: OpenSM's own PathRecord and MultiPathRecord "
            "handlers answer");
}

TEST_F(EngineTest, AFailedReloadKeepsThePreviousPolicy) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  write_policy("qos-levels\nqos-level\nname: DEFAULT\nsl: 99\nend-qos-level\nend-qos-levels\n");
  nlohmann::json reply = e->reload();
  EXPECT_FALSE(reply["ok"].get<bool>());
  EXPECT_EQ(reply["message"], "policy reload failed: the previous policy stays in force");
  ASSERT_FALSE(reply["diagnostics"].empty());
  EXPECT_EQ(reply["diagnostics"][0].get<std::string>().rfind(policy_path + ":4:", 0), 0u);
  EXPECT_EQ(answered_sl(*e), 4);
}

TEST_F(EngineTest, AReloadPutsTheNewPolicyInForce) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  write_policy(policy_with_sl(6));
  EXPECT_TRUE(e->reload()["ok"].get<bool>());
  EXPECT_EQ(answered_sl(*e), 6);
}

TEST_F(EngineTest, ANewModelWithABadPolicyFileKeepsTheLastGoodPolicy) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  write_policy("qos-levels\n");
  EXPECT_TRUE(e->rebuild());  // the new fabric, the last good policy
  EXPECT_EQ(answered_sl(*e), 4);
  EXPECT_EQ(log.back(), "the policy or partitions have errors: the previous ones stay in force");
}

// A requester LID the model does not know: OpenSM's own handler takes the query, which drops it
// as OpenSM alone would (ERR 1F16) rather than answering it with no partition check.
TEST_F(EngineTest, AnUnknownRequesterIsLeftToOpenSm) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  bool sent = false;
  EXPECT_EQ(e->answer(get_a_to_b(), 99, [&](std::span<const uint8_t>) { sent = true; }),
            Engine::Outcome::kFallback);
  EXPECT_FALSE(sent);
  nlohmann::json s = e->stats();
  EXPECT_EQ(s["requests"], 0);
  EXPECT_EQ(s["plugin"]["fallbacks"], 1);
}

TEST_F(EngineTest, StatsCountAnsweredRequests) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  answered_sl(*e);
  nlohmann::json s = e->stats();
  EXPECT_EQ(s["requests"], 1);
  EXPECT_EQ(s["plugin"]["answering"], true);
  EXPECT_EQ(s["fabric"]["endpoints"], 3);
}

TEST_F(EngineTest, ATableWithinTheDefaultBoundsIsAnswered) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  auto resp = answer_of(*e, open_table());
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  // A to B, B to A, and each to itself: none is a switch's.
  EXPECT_GE(resp->data.size() / sa::kPathRecordSize, 2u);
  EXPECT_EQ(e->stats()["bounded"]["records"], 0);
}

TEST_F(EngineTest, ATableLongerThanMaxRecordsIsNoResources) {
  write_policy(policy_with_sl(4));
  auto e = engine([](Options& o) { o.max_records = 1; });
  ASSERT_TRUE(e->rebuild());
  auto resp = answer_of(*e, open_table());
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, sa::status::kNoResources << 8)
      << sa::mad_status_name(resp->mad.status);
  EXPECT_EQ(resp->mad.method, sa::method::kGetTableResp);
  EXPECT_EQ(e->stats()["bounded"]["records"], 1);
  // A Get answers one record: never cut.
  EXPECT_EQ(answered_sl(*e), 4);
}

TEST_F(EngineTest, NoMaxRecordsMeansNoBound) {
  write_policy(policy_with_sl(4));
  auto e = engine([](Options& o) {
    o.max_records = 0;
    o.answer_time_limit = std::chrono::milliseconds(0);
  });
  ASSERT_TRUE(e->rebuild());
  auto resp = answer_of(*e, open_table());
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  EXPECT_EQ(e->stats()["bounded"]["records"], 0);
}

// A SubnAdmGet(PathRecord) from A naming only a DGID.
std::vector<uint8_t> get_to_gid(uint64_t prefix, uint64_t guid) {
  sa::PathRecord q;
  q.dgid = sa::make_gid(prefix, guid);
  sa::SaMad m;
  m.mad.method = sa::method::kGet;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = 0x79;
  m.sa.comp_mask = sa::pr_mask::kDgid;
  auto bytes = sa::encode_path_record(q);
  m.data.assign(bytes->begin(), bytes->end());
  return sa::encode_sa_mad(m);
}

TEST_F(EngineTest, AGidOfTheSubnetTheModelLacksGoesToOpenSm) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  // An alias GUID (an SR-IOV virtual function's): OpenSM resolves it, the model cannot.
  EXPECT_EQ(e->answer(get_to_gid(testing::kPrefix, 0xA11A5), 2, [](std::span<const uint8_t>) {}),
            Engine::Outcome::kFallback);
  EXPECT_EQ(e->stats()["fallback_reasons"]["unknown_port"], 1);
  // B's own GID is the model's to answer.
  EXPECT_EQ(
      e->answer(get_to_gid(testing::kPrefix, testing::kPortB), 2, [](std::span<const uint8_t>) {}),
      Engine::Outcome::kAnswered);
}

TEST_F(EngineTest, APathRecordToAGroupTheRequesterMaySeeGoesToOpenSm) {
  write_policy(policy_with_sl(4));
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  // The default partition's IPoIB broadcast group; A holds its P_Key.
  EXPECT_EQ(e->answer(get_to_gid(0xff12401bffff0000ULL, 0xffffffffULL), 2,
                      [](std::span<const uint8_t>) {}),
            Engine::Outcome::kFallback);
  EXPECT_EQ(e->stats()["fallback_reasons"]["multicast"], 1);
}

// OpenSM may put a port's alias in the SGID or DGID of its records even for a query by LID.
TEST_F(EngineTest, AQueryThatMayTouchAPortWithAnAliasGoesToOpenSm) {
  write_policy(policy_with_sl(4));
  aliases = {{testing::kPortB, testing::kPortB}};  // a port's own GUID is no alias
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
  aliases = {{testing::kPortB, 0xA11A5}};
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), -1);  // A to B by LID: B has an alias
  EXPECT_EQ(e->answer(open_table(), 2, [](std::span<const uint8_t>) {}),
            Engine::Outcome::kFallback);  // an open end may be B
  EXPECT_EQ(e->stats()["fallback_reasons"]["aliased_port"], 2);
}

// A SubnAdmGet(PathRecord) from A to the switch S (LID 1).
std::vector<uint8_t> get_a_to_switch() {
  return get_path(2, 1, 0x7A);
}

// A SubnAdmGetMulti(MultiPathRecord) from A's GID to the GID (`prefix`, `dguid`).
std::vector<uint8_t> multipath_a_to(uint64_t dguid, uint64_t prefix = testing::kPrefix) {
  sa::MultiPathRecord q;
  q.sgids = {sa::make_gid(testing::kPrefix, testing::kPortA)};
  q.dgids = {sa::make_gid(prefix, dguid)};
  sa::SaMad m;
  m.mad.method = sa::method::kGetMulti;
  m.mad.attr_id = sa::attr::kMultiPathRecord;
  m.mad.tid = 0x7B;
  m.rmpp.version = sa::rmpp::kVersion;
  m.rmpp.type = sa::rmpp::kTypeData;
  m.rmpp.flags = sa::rmpp::kFlagActive | sa::rmpp::kFlagFirst | sa::rmpp::kFlagLast;
  m.rmpp.segment = 1;
  m.sa.comp_mask = sa::mpr_mask::kSgidCount | sa::mpr_mask::kDgidCount;
  auto bytes = sa::encode_multipath_record(q);
  m.data.assign(bytes->begin(), bytes->end());
  m.rmpp.payload_length = static_cast<uint32_t>(20 + m.data.size());
  return sa::encode_sa_mad(m);
}

// OpenSM answers for a port not yet Active as for an Active one; the model knows no link or
// P_Key for it. Queries that may end there are OpenSM's; the others stay the plugin's.
TEST_F(EngineTest, AQueryThatMayTouchAPortNotYetActiveGoesToOpenSm) {
  write_policy(policy_with_sl(4));
  b_state = testing::kArmed;
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  auto none = [](std::span<const uint8_t>) {};
  EXPECT_EQ(answered_sl(*e), -1);  // A to B by LID
  EXPECT_EQ(e->answer(get_to_gid(testing::kPrefix, testing::kPortB), 2, none),
            Engine::Outcome::kFallback);
  EXPECT_EQ(e->answer(open_table(), 2, none), Engine::Outcome::kFallback);  // may end at B
  EXPECT_EQ(e->answer(multipath_a_to(testing::kPortB), 2, none), Engine::Outcome::kFallback);
  EXPECT_EQ(e->stats()["fallback_reasons"]["inactive_port"], 4);
  // A to the switch, A to A: B is no end of them.
  EXPECT_EQ(e->answer(get_a_to_switch(), 2, none), Engine::Outcome::kAnswered);
  EXPECT_EQ(e->answer(multipath_a_to(testing::kPortA), 2, none), Engine::Outcome::kAnswered);
  // A GID of another subnet names no port here: the plugin's "invalid GID" is OpenSM's.
  EXPECT_EQ(e->answer(multipath_a_to(0x999, 0xFEC0000000000000ULL), 2, none),
            Engine::Outcome::kAnswered);
  // Once OpenSM has made B's link Active, the next model answers for B.
  b_state = testing::kActive;
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
}

// explain says when OpenSM's own handler answers the query, and why; the plugin's answer follows.
TEST_F(EngineTest, ExplainSaysWhenOpenSmsHandlerAnswers) {
  write_policy(policy_with_sl(4));
  b_state = testing::kArmed;
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  auto to_b = e->explain({{"command", "explain"}, {"slid", 2}, {"dlid", 3}});
  ASSERT_TRUE(to_b.value("ok", false)) << to_b.dump();
  EXPECT_EQ(to_b["explain"].value("handed_to_opensm", ""), "inactive_port") << to_b.dump();
  EXPECT_TRUE(to_b["explain"].value("summary", "").starts_with("OpenSM's own handler answers"))
      << to_b.dump();
  auto to_switch = e->explain({{"command", "explain"}, {"slid", 2}, {"dlid", 1}});
  ASSERT_TRUE(to_switch.value("ok", false)) << to_switch.dump();
  EXPECT_FALSE(to_switch["explain"].contains("handed_to_opensm")) << to_switch.dump();
}

TEST_F(EngineTest, AQueryThatMayCrossASwitchPortNotYetActiveGoesToOpenSm) {
  write_policy(policy_with_sl(4));
  s2_state = testing::kInit;  // B's port Active, the switch's side of its link not yet
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), -1);
  EXPECT_EQ(e->stats()["fallback_reasons"]["inactive_port"], 1);
  EXPECT_EQ(e->answer(get_a_to_switch(), 2, [](std::span<const uint8_t>) {}),
            Engine::Outcome::kAnswered);
}

TEST_F(EngineTest, AnEmptyPkeyTableLeavesPathQueriesToOpenSm) {
  write_policy(policy_with_sl(4));
  b_pkeys = false;  // B's table not read yet: OpenSM counts B as sharing every partition
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), -1);
  EXPECT_EQ(e->stats()["fallback_reasons"]["no_pkey_table"], 1);
  b_pkeys = true;
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
}

TEST_F(EngineTest, WithQosOffOpenSmAnswersEveryQueryAndTheStatsSayWhy) {
  write_policy(policy_with_sl(4));
  OsmConfig osm;
  osm.qos = false;
  auto e = engine({}, osm);
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), -1);
  nlohmann::json stats = e->stats();
  EXPECT_FALSE(stats["plugin"]["answering"].get<bool>());
  EXPECT_EQ(stats["plugin"]["handed_to_opensm"], "OpenSM runs with qos FALSE");
  // The same reason as a metric, for an alert that fires while OpenSM's handlers answer.
  size_t handed = 0;
  const common::metrics::Snapshot metrics = e->metrics();
  for (const auto& f : metrics.families()) {
    if (f.name != "rdma_qos_opensm_plugin_handed_to_opensm_info") continue;
    for (const auto& s : f.samples) {
      EXPECT_EQ(s.labels, std::vector<std::string>{"OpenSM runs with qos FALSE"});
      EXPECT_EQ(s.value, 1);
      ++handed;
    }
  }
  EXPECT_EQ(handed, 1u);
  EXPECT_EQ(stats["fallback_reasons"]["qos_off"], 1);
}

TEST_F(EngineTest, TheRoutingEnginesSlReplacesTheLevelsWhereItAssignsSls) {
  write_policy(policy_with_sl(4));
  routing = {"lash", true, false};
  path_sl = [](uint8_t hint) { return hint + 3; };
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 7);
  ASSERT_FALSE(hints.empty());
  EXPECT_EQ(hints.front(), 4);  // told the level's SL, as OpenSM tells it
  nlohmann::json stats = e->stats();
  EXPECT_EQ(stats["routing"]["engine"], "lash");
  EXPECT_TRUE(stats["routing"]["assigns_sl"].get<bool>());
  EXPECT_FALSE(stats["routing"]["qos_setup_applied"].get<bool>());
}

TEST_F(EngineTest, AnEngineThatAssignsNoSlsIsNeverAsked) {
  write_policy(policy_with_sl(4));
  routing = {"minhop", false, false};
  path_sl = [](uint8_t) { return 9; };
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
  EXPECT_TRUE(hints.empty());
  EXPECT_TRUE(e->stats()["routing"]["qos_setup_applied"].get<bool>());
}

TEST_F(EngineTest, AnEngineThatStoppedAssigningSlsLeavesTheChosenSl) {
  write_policy(policy_with_sl(4));
  routing = {"lash", true, false};  // the model's engine; OpenSM has since routed without it
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
  EXPECT_FALSE(hints.empty());
}

// A node swap: host B comes back with one port where the policy names its second.
TEST_F(EngineTest, AFabricThePolicyNoLongerFitsHandsEveryQueryToOpenSmUntilItFitsAgain) {
  write_policy(
      "port-groups\nport-group\nname: BSecond\nport-name: \"host B/P2\"\nend-port-group\n"
      "end-port-groups\n" +
      policy_with_sl(4));
  b_ports = 2;
  auto e = engine();
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);

  b_ports = 1;
  EXPECT_FALSE(e->rebuild());
  EXPECT_FALSE(e->ready());
  EXPECT_EQ(answered_sl(*e), -1);  // not the previous model's answer
  nlohmann::json stats = e->stats();
  EXPECT_FALSE(stats["plugin"]["answering"].get<bool>());
  EXPECT_EQ(stats["plugin"]["handed_to_opensm"], "the policy or partitions have errors");
  EXPECT_EQ(stats["fallback_reasons"]["no_model"], 1);
  EXPECT_NE(std::find(log.begin(), log.end(),
                      "the policy or partitions have errors: OpenSM's own PathRecord and "
                      "MultiPathRecord handlers answer"),
            log.end());

  b_ports = 2;
  ASSERT_TRUE(e->rebuild());
  EXPECT_EQ(answered_sl(*e), 4);
  EXPECT_TRUE(e->stats()["plugin"]["handed_to_opensm"].is_null());
}

}  // namespace
}  // namespace rdmaqos::osmp
