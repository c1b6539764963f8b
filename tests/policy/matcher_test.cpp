// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Matching semantics (OpenSM's, Documentation/opensm-semantics.md), fabric resolution of
// port groups, the indexed matcher against the linear scan, and atomic reload.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <random>
#include <thread>

#include "rdma-qos/policy/compiled_policy.h"

namespace rdmaqos::policy {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSid = kCompServiceIdMsb | kCompServiceIdLsb;

// srv01 (port GUID 0x11), srv02 (0x21, 0x22: two ports), "dup HCA" twice (0x31, 0x41), the SM
// (0x51) and a switch (GUID 0x100, 8 ports).
Fabric small_fabric() {
  Fabric f;
  f.nodes = {
      {0x10, NodeType::kCa, "srv01 HCA-1", 1, {{1, 0x11}}},
      {0x20, NodeType::kCa, "srv02 HCA-1", 2, {{1, 0x21}, {2, 0x22}}},
      {0x30, NodeType::kCa, "dup HCA", 1, {{1, 0x31}}},
      {0x40, NodeType::kCa, "dup HCA", 1, {{1, 0x41}}},
      {0x50, NodeType::kCa, "sm01 HCA-1", 1, {{1, 0x51}}},
      {0x100, NodeType::kSwitch, "leaf01", 8, {{0, 0x100}}},
  };
  f.sm_port_guid = 0x51;
  f.partitions = {
      {"Compute", 0x10, true, std::nullopt, {{0x11, true}, {0x21, false}}, {1, 1}, {}, {}, {}},
      {"Storage", 0x20, true, std::nullopt, {{0x22, true}, {0x31, true}}, {2, 1}, {}, {}, {}},
  };
  return f;
}

std::shared_ptr<const CompiledPolicy> load(const std::string& text, const Fabric* f = nullptr) {
  CompileResult r = load_policy(text, f);
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::kError) ADD_FAILURE() << format_diagnostic(d, "test.conf");
  return r.policy;
}

PathQuery path(uint64_t src, uint64_t dst) {
  PathQuery q;
  q.source_guid = src;
  q.destination_guid = dst;
  return q;
}

PathQuery with_sid(PathQuery q, uint64_t sid) {
  q.component_mask |= kSid;
  q.service_id = sid;
  return q;
}

PathQuery with_class(PathQuery q, uint16_t c) {
  q.component_mask |= kCompQosClass;
  q.qos_class = c;
  return q;
}

PathQuery with_pkey(PathQuery q, uint16_t p) {
  q.component_mask |= kCompPkey;
  q.pkey = p;
  return q;
}

PathQuery with_tclass(PathQuery q, uint8_t t) {
  q.tclass = t;
  return q;
}

std::string levels(const std::string& extra = "") {
  return "qos-levels\n"
         "qos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
         "qos-level\nname: L1\nsl: 1\nend-qos-level\n"
         "qos-level\nname: L2\nsl: 2\nend-qos-level\n"
         "qos-level\nname: L3\nsl: 3\nend-qos-level\n" +
         extra + "end-qos-levels\n";
}

std::string rules(const std::string& body) {
  return "qos-match-rules\n" + body + "end-qos-match-rules\n";
}

std::string rule(const std::string& criteria, const std::string& level) {
  return "qos-match-rule\n" + criteria + "qos-level-name: " + level + "\nend-qos-match-rule\n";
}

// Diagnostics as printed, without the unused-level warnings levels() causes in most tests.
std::vector<std::string> texts(const Diagnostics& diags) {
  std::vector<std::string> out;
  for (const auto& d : diags)
    if (d.message.find("is never used") == std::string::npos)
      out.push_back(format_diagnostic(d, "p"));
  return out;
}

uint8_t sl_of(const CompiledPolicy& p, const PathQuery& q) {
  return p.match(q).level->sl;
}

TEST(PolicyMatcher, NoMatchGivesTheDefaultLevel) {
  auto p = load(levels() + rules(rule("service-id: 0x100\n", "L1")));
  MatchResult m = p->match(path(0x11, 0x21));
  EXPECT_EQ(m.level->name, "DEFAULT");
  EXPECT_FALSE(m.rule);
}

TEST(PolicyMatcher, FirstMatchInFileOrderWins) {
  auto p = load(levels() +
                rules(rule("service-id: 0x100-0x1FF\n", "L1") + rule("service-id: 0x150\n", "L2")));
  EXPECT_EQ(sl_of(*p, with_sid(path(0x11, 0x21), 0x150)), 1);
}

TEST(PolicyMatcher, ServiceIdNeedsBothMaskBits) {
  auto p = load(levels() + rules(rule("service-id: 0x100\n", "L1")));
  PathQuery q = path(0x11, 0x21);
  q.service_id = 0x100;
  q.component_mask = kCompServiceIdMsb;
  EXPECT_EQ(sl_of(*p, q), 0);
  q.component_mask = kCompServiceIdLsb;
  EXPECT_EQ(sl_of(*p, q), 0);
  q.component_mask = kSid;
  EXPECT_EQ(sl_of(*p, q), 1);
}

TEST(PolicyMatcher, CriterionWithoutItsMaskBitNeverMatches) {
  auto p = load(levels() + rules(rule("qos-class: 0\n", "L1") + rule("pkey: 0\n", "L2")));
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 0);  // class 0 and pkey 0, but not in the mask
  EXPECT_EQ(sl_of(*p, with_class(path(0x11, 0x21), 0)), 1);
  EXPECT_EQ(sl_of(*p, with_pkey(path(0x11, 0x21), 0)), 2);
}

TEST(PolicyMatcher, AllNamedCriteriaMustMatch) {
  auto p = load(levels() + rules(rule("qos-class: 5\nservice-id: 0x10\n", "L1")));
  EXPECT_EQ(sl_of(*p, with_class(path(0x11, 0x21), 5)), 0);
  EXPECT_EQ(sl_of(*p, with_sid(path(0x11, 0x21), 0x10)), 0);
  EXPECT_EQ(sl_of(*p, with_sid(with_class(path(0x11, 0x21), 5), 0x10)), 1);
}

TEST(PolicyMatcher, FieldsTheRuleDoesNotNameAreIgnored) {
  auto p = load(levels() + rules(rule("qos-class: 5\n", "L1")));
  EXPECT_EQ(sl_of(*p, with_pkey(with_sid(with_class(path(0x11, 0x21), 5), 0x99), 0x7FFF)), 1);
}

// tclass (an rdma-qos extension) counts only when the query carries a traffic class.
TEST(PolicyMatcher, TClassRuleMatchesOnlyAQueryCarryingATrafficClassInItsRanges) {
  auto p = load(levels() + rules(rule("tclass: 96,104-111\n", "L1")));
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 0);
  EXPECT_EQ(sl_of(*p, with_tclass(path(0x11, 0x21), 96)), 1);
  EXPECT_EQ(sl_of(*p, with_tclass(path(0x11, 0x21), 107)), 1);
  EXPECT_EQ(sl_of(*p, with_tclass(path(0x11, 0x21), 0)), 0);
  EXPECT_EQ(sl_of(*p, with_tclass(path(0x11, 0x21), 112)), 0);
}

TEST(PolicyMatcher, TClassAndQosClassMustBothMatch) {
  auto p =
      load(levels() + rules(rule("qos-class: 5\ntclass: 20\n", "L1") + rule("tclass: 20\n", "L2")));
  EXPECT_EQ(sl_of(*p, with_tclass(with_class(path(0x11, 0x21), 5), 20)), 1);
  EXPECT_EQ(sl_of(*p, with_tclass(with_class(path(0x11, 0x21), 6), 20)), 2);
  EXPECT_EQ(sl_of(*p, with_class(path(0x11, 0x21), 5)), 0);
}

TEST(PolicyMatcher, ExplainNamesTClassAsTheFailedCriterion) {
  auto p = load(levels() + rules(rule("tclass: 8\n", "L1")));
  Explanation e = p->explain(with_tclass(path(0x11, 0x21), 9));
  ASSERT_EQ(e.considered.size(), 1u);
  EXPECT_EQ(e.considered[0].failed, Criterion::kTClass);
  EXPECT_EQ(criterion_name(Criterion::kTClass), "tclass");
  EXPECT_FALSE(e.result.rule);
}

TEST(PolicyMatcher, PkeyIsComparedWithoutTheMembershipBit) {
  auto p = load(levels() + rules(rule("pkey: 0x8010\n", "L1")));
  EXPECT_EQ(sl_of(*p, with_pkey(path(0x11, 0x21), 0x0010)), 1);
  EXPECT_EQ(sl_of(*p, with_pkey(path(0x11, 0x21), 0x8010)), 1);
}

std::string guid_groups() {
  return "port-groups\n"
         "port-group\nname: Srv1\nport-guid: 0x11\nend-port-group\n"
         "port-group\nname: Srv2\nport-guid: 0x21-0x22\nend-port-group\n"
         "end-port-groups\n";
}

TEST(PolicyMatcher, SourceAndDestinationMustBothMatch) {
  auto p = load(
      guid_groups() + levels() +
      rules(rule("source: Srv1\ndestination: Srv2\n", "L1") + rule("destination: Srv1\n", "L2")));
  EXPECT_EQ(sl_of(*p, path(0x11, 0x22)), 1);
  EXPECT_EQ(sl_of(*p, path(0x22, 0x11)), 2);  // the reverse is a different query
  EXPECT_EQ(sl_of(*p, path(0x21, 0x22)), 0);
}

// A rule side naming more groups than a rule keeps inline (two) still matches any of them, by
// the index (match) and by the scan (explain).
TEST(PolicyMatcher, SourceOfFourGroupsMatchesAnyOfThem) {
  const std::string groups =
      "port-groups\n"
      "port-group\nname: A\nport-guid: 0x11\nend-port-group\n"
      "port-group\nname: B\nport-guid: 0x21\nend-port-group\n"
      "port-group\nname: C\nport-guid: 0x22\nend-port-group\n"
      "port-group\nname: D\nport-guid: 0x31\nend-port-group\n"
      "end-port-groups\n";
  auto p = load(groups + levels() + rules(rule("source: A, B, C, D\n", "L1")));
  for (uint64_t src : {0x11, 0x21, 0x22, 0x31}) {
    EXPECT_EQ(sl_of(*p, path(src, 0x51)), 1) << std::hex << src;
    EXPECT_EQ(p->explain(path(src, 0x51)).result.rule, 0u) << std::hex << src;
  }
  EXPECT_EQ(sl_of(*p, path(0x41, 0x51)), 0);
}

TEST(PolicyMatcher, RuleWithoutCriteriaMatchesEverything) {
  auto p = load(levels() + rules(rule("", "L3") + rule("qos-class: 1\n", "L1")));
  EXPECT_EQ(sl_of(*p, with_class(path(0x11, 0x21), 1)), 3);
}

TEST(PolicyMatcher, FullRulesBeforeUlpRulesAndUlpDefaultLast) {
  auto p = load("qos-ulps\ndefault : 7\nsdp : 4\nany, service-id 0x10000 : 5\nend-qos-ulps\n" +
                rules(rule("service-id: 0x10001\n", "Hi")) +
                "qos-levels\nqos-level\nname: Hi\nsl: 9\nend-qos-level\nend-qos-levels\n");
  EXPECT_EQ(sl_of(*p, with_sid(path(0x11, 0x21), 0x10001)), 9);
  EXPECT_EQ(sl_of(*p, with_sid(path(0x11, 0x21), 0x10000)), 4);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 7);
  EXPECT_EQ(p->default_level().name, "SimpleQoSLevel_DEFAULT");
}

TEST(PolicyMatcher, DefaultLevelWinsOverUlpDefault) {
  auto p = load(levels() + "qos-ulps\ndefault : 5\nend-qos-ulps\n");
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 0);
}

TEST(PolicyMatcher, UlpTargetAndSourcePortGuids) {
  auto p = load(
      "qos-ulps\ndefault : 0\nsrp, target-port-guid 0x21 : 1\nany, source-port-guid 0x11 : 2\n"
      "any, source-target-port-guid 0x41 : 3\nend-qos-ulps\n");
  EXPECT_EQ(sl_of(*p, path(0x31, 0x21)), 1);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x31)), 2);
  EXPECT_EQ(sl_of(*p, path(0x41, 0x31)), 0);  // both ends must be in the set
  EXPECT_EQ(sl_of(*p, path(0x41, 0x41)), 3);
}

TEST(PolicyMatcher, NodeTypeGroupsMatchAtQueryTime) {
  auto p = load(
      "port-groups\nport-group\nname: Sw\nnode-type: SWITCH\nend-port-group\n"
      "end-port-groups\n" +
      levels() + rules(rule("destination: Sw\n", "L2")));
  PathQuery q = path(0x11, 0x100);
  q.destination_type = NodeType::kSwitch;
  EXPECT_EQ(sl_of(*p, q), 2);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 0);
}

TEST(PolicyMatcher, PortNameResolvesThroughTheFabric) {
  Fabric f = small_fabric();
  auto p = load(
      "port-groups\nport-group\nname: G\nport-name: \"srv02 HCA-1/P2\"\n"
      "end-port-group\nend-port-groups\n" +
          levels() + rules(rule("destination: G\n", "L1")),
      &f);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x22)), 1);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x21)), 0);
}

TEST(PolicyMatcher, SwitchPortNameSelectsTheSwitch) {
  Fabric f = small_fabric();
  auto p = load(
      "port-groups\nport-group\nname: G\nport-name: \"leaf01/P3\"\n"
      "end-port-group\nend-port-groups\n" +
          levels() + rules(rule("destination: G\n", "L1")),
      &f);
  PathQuery q = path(0x11, 0x100);
  q.destination_type = NodeType::kSwitch;
  EXPECT_EQ(sl_of(*p, q), 1);
}

TEST(PolicyMatcher, DuplicateDescriptionsSelectEveryNodeWithAWarning) {
  Fabric f = small_fabric();
  CompileResult r = load_policy(
      "port-groups\nport-group\nname: G\nport-name: \"dup HCA/P1\"\n"
      "end-port-group\nend-port-groups\n" +
          levels() + rules(rule("destination: G\n", "L1")),
      &f);
  ASSERT_TRUE(r.policy);
  EXPECT_EQ(sl_of(*r.policy, path(0x11, 0x31)), 1);
  EXPECT_EQ(sl_of(*r.policy, path(0x11, 0x41)), 1);
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(format_diagnostic(r.diagnostics[0], "p"),
            "p:4:12: warning: node description 'dup HCA' is shared by 2 nodes: port-name 'dup "
            "HCA/P1' selects all of them\n  hint: OpenSM selects only the node with the lowest "
            "GUID");
}

TEST(PolicyMatcher, PortNumberTheNodeDoesNotHaveIsAnError) {
  Fabric f = small_fabric();
  CompileResult r = load_policy(
      "port-groups\nport-group\nname: G\nport-name: \"srv01 HCA-1/P2\"\n"
      "end-port-group\nend-port-groups\n" +
          levels() + rules(rule("destination: G\n", "L1")),
      &f);
  EXPECT_FALSE(r.policy);
  EXPECT_THAT(texts(r.diagnostics),
              ::testing::Contains("p:4:12: error: port-name 'srv01 HCA-1/P2': node 'srv01 "
                                  "HCA-1' has no port 2 (it has 1)"));
}

TEST(PolicyMatcher, PortNameOfAnUnknownNodeIsAWarning) {
  Fabric f = small_fabric();
  CompileResult r = load_policy(
      "port-groups\nport-group\nname: G\nport-name: \"nobody/P1\"\n"
      "end-port-group\nend-port-groups\n" +
          levels() + rules(rule("destination: G\n", "L1")),
      &f);
  ASSERT_TRUE(r.policy);
  EXPECT_THAT(
      texts(r.diagnostics),
      ::testing::ElementsAre("p:2:1: warning: port-group 'G' selects no port in this fabric",
                             "p:4:12: warning: port-name 'nobody/P1' selects nothing: no node "
                             "'nobody' in the fabric"));
}

TEST(PolicyMatcher, PkeyPartitionAndSelfGroups) {
  Fabric f = small_fabric();
  auto p = load(
      "port-groups\n"
      "port-group\nname: ByPkey\npkey: 0x8020\nend-port-group\n"
      "port-group\nname: ByPart\npartition: Compute\nend-port-group\n"
      "port-group\nname: Sm\nnode-type: SELF\nend-port-group\n"
      "end-port-groups\n" +
          levels() +
          rules(rule("source: Sm\n", "L3") + rule("destination: ByPkey\n", "L1") +
                rule("destination: ByPart\n", "L2")),
      &f);
  EXPECT_EQ(sl_of(*p, path(0x11, 0x31)), 1);  // storage member
  EXPECT_EQ(sl_of(*p, path(0x31, 0x21)), 2);  // limited member of Compute counts
  EXPECT_EQ(sl_of(*p, path(0x51, 0x21)), 3);
}

TEST(PolicyMatcher, IpoibRuleOfAThinPartitionNeverMatches) {
  Fabric f = small_fabric();  // Compute 0x10 has one full member
  CompileResult r = load_policy(
      "qos-ulps\ndefault : 0\nipoib, pkey 0x10 : 1\nipoib, pkey 0x20 : 2\n"
      "ipoib : 3\nend-qos-ulps\n",
      &f);
  ASSERT_TRUE(r.policy);
  EXPECT_EQ(sl_of(*r.policy, with_pkey(path(0x11, 0x21), 0x10)), 0);
  EXPECT_EQ(sl_of(*r.policy, with_pkey(path(0x22, 0x31), 0x20)), 2);
  EXPECT_THAT(texts(r.diagnostics),
              ::testing::ElementsAre(
                  "p:3:1: warning: IPoIB partition 0x0010 has fewer than two full "
                  "members: this rule never matches\n  hint: OpenSM rejects the whole "
                  "policy file in this case",
                  "p:5:1: warning: IPoIB partition 0x7fff does not exist: this rule never "
                  "matches\n  hint: OpenSM rejects the whole policy file in this case"));
}

TEST(PolicyMatcher, ExplainNamesTheFirstFailedCriterionOfEachEarlierRule) {
  auto p = load(guid_groups() + levels() +
                rules(rule("source: Srv2\n", "L1") + rule("qos-class: 1\n", "L2") +
                      rule("source: Srv1\nservice-id: 0x5\n", "L3") +
                      rule("destination: Srv2\n", "L1")));
  Explanation e = p->explain(with_sid(path(0x11, 0x21), 0x6));
  ASSERT_EQ(e.considered.size(), 4u);
  EXPECT_EQ(e.considered[0].failed, Criterion::kSource);
  EXPECT_EQ(e.considered[1].failed, Criterion::kQosClass);
  EXPECT_EQ(e.considered[2].failed, Criterion::kServiceId);
  EXPECT_EQ(e.considered[3].failed, Criterion::kNone);
  EXPECT_EQ(e.result.rule, 3u);
  EXPECT_EQ(e.result.level->name, "L1");
}

// The index must give exactly the linear scan's answer: random policies and queries.
TEST(PolicyMatcher, IndexedMatchEqualsLinearScanOnRandomPolicies) {
  std::mt19937_64 rng(12345);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int round = 0; round < 40; ++round) {
    std::string groups = "port-groups\n";
    for (int g = 0; g < 4; ++g) {
      int lo = pick(8);
      int hi = lo + pick(4);
      groups += fmt::format("port-group\nname: G{}\nport-guid: {}-{}\n{}end-port-group\n", g, lo,
                            hi, pick(4) == 0 ? "node-type: SWITCH\n" : "");
    }
    groups += "end-port-groups\n";
    std::string body;
    int n = 1 + pick(30);
    for (int i = 0; i < n; ++i) {
      std::string c;
      auto rng_range = [&](int span) {
        int lo = pick(span);
        int hi = lo + pick(3);
        return fmt::format("{}-{}", lo, hi);
      };
      if (pick(3) == 0) c += fmt::format("qos-class: {}\n", rng_range(6));
      if (pick(3) == 0) c += fmt::format("service-id: {}\n", rng_range(6));
      if (pick(3) == 0) c += fmt::format("pkey: {}\n", rng_range(6));
      if (pick(3) == 0) c += fmt::format("source: G{}\n", pick(4));
      if (pick(3) == 0) c += fmt::format("destination: G{}\n", pick(4));
      if (pick(3) == 0) c += fmt::format("tclass: {}\n", rng_range(6));
      if (c.empty() && pick(4) != 0) c = fmt::format("qos-class: {}\n", rng_range(6));
      body += rule(c, fmt::format("L{}", 1 + pick(3)));
    }
    ParseResult parsed = parse_policy(groups + levels() + rules(body));
    CompileResult r = CompiledPolicy::compile(parsed.policy, nullptr);
    ASSERT_TRUE(r.policy);
    for (int k = 0; k < 300; ++k) {
      PathQuery q;
      q.component_mask = (pick(2) ? kSid : 0) | (pick(2) ? kCompQosClass : 0) |
                         (pick(2) ? kCompPkey : 0) | (pick(4) == 0 ? kCompServiceIdMsb : 0);
      q.service_id = static_cast<uint64_t>(pick(9));
      q.qos_class = static_cast<uint16_t>(pick(9));
      q.pkey = static_cast<uint16_t>(pick(9));
      q.source_guid = static_cast<uint64_t>(pick(12));
      q.destination_guid = static_cast<uint64_t>(pick(12));
      q.source_type = pick(3) == 0 ? NodeType::kSwitch : NodeType::kCa;
      q.destination_type = pick(3) == 0 ? NodeType::kSwitch : NodeType::kCa;
      if (pick(2)) q.tclass = static_cast<uint8_t>(pick(9));
      MatchResult fast = r.policy->match(q);
      Explanation slow = r.policy->explain(q);
      ASSERT_EQ(fast.rule, slow.result.rule) << "round " << round << " query " << k;
    }
  }
}

TEST(PolicyStore, FailedReloadKeepsThePreviousPolicy) {
  PolicyStore store;
  EXPECT_FALSE(store.current());
  EXPECT_FALSE(has_errors(store.reload(levels(), nullptr)));
  auto first = store.current();
  ASSERT_TRUE(first);
  Diagnostics d = store.reload("qos-levels\nqos-level\nname: DEFAULT\n", nullptr);
  EXPECT_TRUE(has_errors(d));
  EXPECT_EQ(store.current(), first);
  EXPECT_TRUE(store.reload("qos-ulps\ndefault : 4\nend-qos-ulps\n", nullptr).empty());
  EXPECT_EQ(store.current()->default_level().sl, 4);
  EXPECT_EQ(first->default_level().sl, 0);  // a reader's snapshot stays valid and unchanged
}

TEST(PolicyStore, ReadersSeeOneWholePolicyOrTheOtherDuringReloads) {
  // Two policies whose default SL and rule SL are equal within each: a reader that ever saw a
  // mix of the two would get different SLs from one snapshot.
  const std::string a = "qos-ulps\ndefault : 1\nsdp : 1\nend-qos-ulps\n";
  const std::string b = "qos-ulps\ndefault : 2\nsdp : 2\nend-qos-ulps\n";
  PolicyStore store;
  ASSERT_TRUE(store.reload(a, nullptr).empty());
  std::atomic<bool> stop{false};
  std::atomic<int> mixed{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      PathQuery q = with_sid(path(1, 2), 0x10001);
      while (!stop.load()) {
        auto p = store.current();
        if (p->match(q).level->sl != p->default_level().sl) ++mixed;
      }
    });
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(store.reload(i % 2 ? a : b, nullptr).empty());
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(mixed.load(), 0);
}

}  // namespace
}  // namespace rdmaqos::policy
