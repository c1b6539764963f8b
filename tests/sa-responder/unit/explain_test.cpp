// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The explain engine on the two-route subnet: the request parser refuses what a client must
// not send, and an explanation names the rule, the level, the records, and for a LID without a
// record the reason and the hop.
#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/explain.h"
#include "two_route_fabric.h"

namespace rdmaqos::sad {
namespace {

using nlohmann::json;
using testing::two_route_model;

// Line 6: the rule for service ID 0x10; line 11: level Pinned (SL 5, path-bits 1).
const char* kPolicy =
    "qos-levels\n"              // 1
    "qos-level\n"               // 2
    "name: DEFAULT\n"           // 3
    "sl: 0\n"                   // 4
    "end-qos-level\n"           // 5
    "qos-level\n"               // 6
    "name: Pinned\n"            // 7
    "sl: 5\n"                   // 8
    "path-bits: 1\n"            // 9
    "end-qos-level\n"           // 10
    "end-qos-levels\n"          // 11
    "qos-match-rules\n"         // 12
    "qos-match-rule\n"          // 13
    "service-id: 0x10\n"        // 14
    "qos-level-name: Pinned\n"  // 15
    "end-qos-match-rule\n"      // 16
    "end-qos-match-rules\n";    // 17

class ExplainTest : public ::testing::Test {
 protected:
  FabricModel fabric = two_route_model();
  policy::Fabric pfabric = fabric.policy_fabric();
  std::shared_ptr<const policy::CompiledPolicy> policy =
      policy::load_policy(kPolicy, &pfabric).policy;

  json ask(const json& body) const {
    auto r = parse_explain_request(body);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r) return {};
    AnswerContext ctx;
    ctx.fabric = &fabric;
    ctx.policy = policy.get();
    return explain(ctx, *r, "p.conf");
  }
};

TEST_F(ExplainTest, TheParserRefusesUnknownFieldsWrongTypesAndRanges) {
  EXPECT_FALSE(parse_explain_request(json::array()));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"bogus", 1}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"slid", "4"}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"slid", 70000}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"slid", -1}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"sl", 16}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"qos_class", 0x1000}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"dgid", "not a gid"}}));
  EXPECT_FALSE(parse_explain_request({{"command", "explain"}, {"rate", 7}}));
  EXPECT_FALSE(
      parse_explain_request({{"command", "explain"}, {"rate", {{"selector", 4}, {"value", 7}}}}));
  EXPECT_FALSE(
      parse_explain_request({{"command", "explain"}, {"mtu", {{"selector", 0}, {"value", 64}}}}));
  EXPECT_FALSE(parse_explain_request(
      {{"command", "explain"}, {"mtu", {{"selector", 0}, {"value", 4}, {"x", 1}}}}));
  auto ok = parse_explain_request({{"command", "explain"}, {"slid", 4}, {"dgid", "fe80::21"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->slid, 4);
  EXPECT_TRUE(ok->dgid);
}

TEST_F(ExplainTest, TheRequestRoundTripsThroughItsJson) {
  ExplainRequest r;
  r.slid = 4;
  r.dgid = sa::make_gid(0xFE80000000000000ULL, 0x21);
  r.service_id = 0x10;
  r.sl = 3;
  r.rate = ExplainRequest::Selected{sa::Selector::kLessThan, 7};
  auto back = parse_explain_request(explain_request_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->slid, r.slid);
  EXPECT_EQ(back->dgid, r.dgid);
  EXPECT_EQ(back->service_id, r.service_id);
  EXPECT_EQ(back->sl, r.sl);
  EXPECT_EQ(back->rate, r.rate);
  EXPECT_FALSE(back->mtu);
}

TEST_F(ExplainTest, AnAnsweredQueryNamesTheDefaultLevelAndItsRecords) {
  json e = ask({{"slid", 4}, {"dlid", 8}});
  EXPECT_TRUE(e["answered"]);
  EXPECT_TRUE(e["rule"].is_null());
  EXPECT_TRUE(e["rule_default"]);
  EXPECT_EQ(e["level"]["name"], "DEFAULT");
  EXPECT_EQ(e["level"]["location"], "p.conf:2");
  ASSERT_EQ(e["records"].size(), 1u);
  EXPECT_EQ(e["records"][0]["dlid"], 8);
  EXPECT_EQ(e["records"][0]["rate"], 7);
  EXPECT_TRUE(e["no_record"].empty());
}

// Level Pinned: SL 5 and path-bits 1, whose LIDs cross the link that sends SL 5 to VL 15.
TEST_F(ExplainTest, NoRecordNamesTheRuleTheLevelAndTheHopWhereTheSlMeetsVl15) {
  json e = ask({{"sgid", "fe80::11"}, {"dgid", "fe80::21"}, {"service_id", 0x10}});
  EXPECT_FALSE(e["answered"]);
  EXPECT_EQ(e["rule"]["location"], "p.conf:13");
  EXPECT_EQ(e["level"]["name"], "Pinned");
  EXPECT_EQ(e["level"]["path_bits"], json::parse("[[1,1]]"));
  ASSERT_FALSE(e["no_record"].empty());
  for (const json& n : e["no_record"]) {
    EXPECT_EQ(n["dlid"].get<int>() % 4, 1) << n;  // only the LIDs path-bits allow
    EXPECT_EQ(n["reason"], "level_sl_dropped");
    EXPECT_NE(
        n["detail"].get<std::string>().find("SL 5 maps to VL 15 at switch 'sw' output port 3"),
        std::string::npos)
        << n;
  }
  EXPECT_NE(e["summary"].get<std::string>().find("no record"), std::string::npos);
}

TEST_F(ExplainTest, ASelectorThatCannotBeMetIsNamed) {
  json e = ask({{"slid", 4}, {"dlid", 8}, {"sl", 3}, {"service_id", 0x10}});
  EXPECT_FALSE(e["answered"]);
  ASSERT_EQ(e["no_record"].size(), 1u);
  EXPECT_EQ(e["no_record"][0]["reason"], "sl_not_level");
}

// a to b's LID 9 crosses the 4x SDR link (rate code 3): faster than 10 Gb/s cannot be met.
TEST_F(ExplainTest, ARateSelectorThatCannotBeMetIsNamed) {
  json e = ask({{"slid", 4}, {"dlid", 9}, {"rate", {{"selector", 0}, {"value", 3}}}});
  EXPECT_FALSE(e["answered"]);
  ASSERT_EQ(e["no_record"].size(), 1u);
  EXPECT_EQ(e["no_record"][0]["reason"], "selector");
  EXPECT_NE(e["no_record"][0]["detail"].get<std::string>().find("rate code 3"), std::string::npos)
      << e;
  // The fast route meets it.
  EXPECT_TRUE(
      ask({{"slid", 4}, {"dlid", 8}, {"rate", {{"selector", 0}, {"value", 3}}}})["answered"]);
}

TEST_F(ExplainTest, ValuesTheSaRefusesAreAnError) {
  json e = ask({{"slid", 4}, {"dlid", 8}, {"mtu", {{"selector", 2}, {"value", 6}}}});
  EXPECT_FALSE(e["answered"]);
  EXPECT_NE(e["error"].get<std::string>().find("REQ_INVALID"), std::string::npos) << e;
}

TEST_F(ExplainTest, NoSharedPartitionIsNamed) {
  fabric.nodes[3].ports[1].pkeys = {0x8010};
  json e = ask({{"slid", 4}, {"dlid", 8}});
  EXPECT_FALSE(e["answered"]);
  ASSERT_EQ(e["no_record"].size(), 1u);
  EXPECT_EQ(e["no_record"][0]["reason"], "no_common_pkey");
  EXPECT_NE(e["summary"].get<std::string>().find("no shared partition"), std::string::npos);
}

TEST_F(ExplainTest, NoRouteIsNamed) {
  fabric.nodes[0].lft[8] = 0xFF;
  json e = ask({{"slid", 4}, {"dlid", 8}});
  EXPECT_FALSE(e["answered"]);
  ASSERT_EQ(e["no_record"].size(), 1u);
  EXPECT_EQ(e["no_record"][0]["reason"], "no_route");
}

TEST_F(ExplainTest, AnEndThatNamesNoPortIsAnError) {
  json e = ask({{"slid", 4}, {"dlid", 99}});
  EXPECT_FALSE(e["answered"]);
  EXPECT_NE(e["error"].get<std::string>().find("LID 99"), std::string::npos);
  e = ask({{"slid", 4}});
  EXPECT_NE(e["error"].get<std::string>().find("destination"), std::string::npos);
}

}  // namespace
}  // namespace rdmaqos::sad
