// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The policy file syntax, keyword by keyword, and every diagnostic with its exact text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "rdma-qos/policy/opensm_compat.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Every diagnostic as the command prints it, for a policy file named p.conf.
std::vector<std::string> diagnostics_of(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& d : parse_policy(text).diagnostics)
    out.push_back(format_diagnostic(d, "p.conf"));
  return out;
}

constexpr const char* kDefault =
    "qos-levels\n"
    "  qos-level\n"
    "    name: DEFAULT\n"
    "    sl: 0\n"
    "  end-qos-level\n"
    "end-qos-levels\n";

// ---- sections and the smallest policies -----------------------------------------------

TEST(PolicyParser, ShortestFullPolicyIsClean) {
  ParseResult r = parse_policy(kDefault);
  EXPECT_THAT(diagnostics_of(kDefault), IsEmpty());
  ASSERT_EQ(r.policy.levels.size(), 1u);
  EXPECT_EQ(r.policy.levels[0].name, "DEFAULT");
  EXPECT_EQ(r.policy.levels[0].sl, 0);
}

TEST(PolicyParser, ShortestUlpPolicyIsClean) {
  ParseResult r = parse_policy("qos-ulps\n  default : 3 # default SL\nend-qos-ulps\n");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_EQ(r.policy.ulp_default_sl, 3);
}

TEST(PolicyParser, EmptyFileHasNoDefaultLevel) {
  EXPECT_THAT(diagnostics_of(""),
              ElementsAre("p.conf:1:1: error: no DEFAULT qos-level\n"
                          "  hint: add a qos-level with 'name: DEFAULT' or a qos-ulps line "
                          "'default : <sl>'"));
}

TEST(PolicyParser, DefaultLevelNameIsCaseInsensitive) {
  EXPECT_TRUE(parse_policy("qos-levels\nqos-level\nname: default\nsl: 1\nend-qos-level\n"
                           "end-qos-levels\n")
                  .ok());
}

TEST(PolicyParser, SectionsMayRepeatAndComeInAnyOrder) {
  ParseResult r = parse_policy(
      "qos-match-rules\nqos-match-rule\nqos-class: 1\nqos-level-name: Hi\nend-qos-match-rule\n"
      "end-qos-match-rules\n"
      "qos-levels\nqos-level\nname: Hi\nsl: 2\nend-qos-level\nend-qos-levels\n" +
      std::string(kDefault));
  EXPECT_THAT(r.diagnostics, IsEmpty());
  EXPECT_EQ(r.policy.levels.size(), 2u);
  EXPECT_EQ(r.policy.rules.size(), 1u);
}

TEST(PolicyParser, TrailingCommentWithoutNewlineIsAccepted) {
  EXPECT_TRUE(parse_policy(std::string(kDefault) + "# last line").diagnostics.empty());
}

TEST(PolicyParser, SeveralKeywordsOnOneLine) {
  ParseResult r = parse_policy(
      "qos-levels qos-level\nname: DEFAULT\nsl: 0\nend-qos-level "
      "end-qos-levels\n");
  EXPECT_THAT(r.diagnostics, IsEmpty());
}

// ---- port-groups ------------------------------------------------------------------------

constexpr const char* kGroupUse =
    "qos-match-rules\nqos-match-rule\nsource: G\nqos-level-name: DEFAULT\n"
    "end-qos-match-rule\nend-qos-match-rules\n";

ParseResult parse_group(const std::string& body) {
  return parse_policy(std::string(kDefault) + "port-groups\nport-group\nname: G\n" + body +
                      "end-port-group\nend-port-groups\n" + kGroupUse);
}

TEST(PolicyParser, PortGuidValuesListsRangesAndRepeatedLinesMerge) {
  ParseResult r = parse_group(
      "use: SRP targets, storage\nport-guid: 0x10, 0x20-0x2f\n"
      "port-guid: 0x30 - 0x31, 0x1\n");
  ASSERT_TRUE(r.ok());
  const PortGroup& g = r.policy.port_groups.at(0);
  EXPECT_EQ(g.use, "SRP targets, storage");
  EXPECT_EQ(g.port_guids, (RangeList{{0x1, 0x1}, {0x10, 0x10}, {0x20, 0x31}}));
}

TEST(PolicyParser, PortNameQuotedKeepsBlanksAndLowerPIsAccepted) {
  ParseResult r = parse_group("port-name: \"srv01 HCA-1/P1\", \"srv02 HCA-1/p2\"\n");
  ASSERT_THAT(r.diagnostics, IsEmpty());
  const auto& names = r.policy.port_groups.at(0).port_names;
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].node_description, "srv01 HCA-1");
  EXPECT_EQ(names[0].port, 1);
  EXPECT_EQ(names[1].node_description, "srv02 HCA-1");
  EXPECT_EQ(names[1].port, 2);
}

TEST(PolicyParser, UnquotedPortNameWithBlanksIsKeptAndWarned) {
  ParseResult r = parse_group("port-name: vs1 HCA-1/P1\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.policy.port_groups.at(0).port_names.at(0).node_description, "vs1 HCA-1");
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nname: G\nport-name: vs1 HCA-1/P1\n"
                             "end-port-group\nend-port-groups\n" +
                             kGroupUse),
              ElementsAre("p.conf:10:12: warning: unquoted port-name 'vs1 HCA-1/P1' contains "
                          "blanks: OpenSM drops them and never matches it; rdma-qos matches it "
                          "as written\n  hint: write it quoted: \"vs1 HCA-1/P1\""));
}

TEST(PolicyParser, PortNameWithoutPortIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nname: G\nport-name: \"srv01 HCA-1\"\n"
                             "end-port-group\nend-port-groups\n" +
                             kGroupUse),
              ElementsAre("p.conf:10:12: error: port-name 'srv01 HCA-1' has no '/P<n>' port "
                          "suffix\n  hint: write \"node description/P<port number>\""));
}

TEST(PolicyParser, PortNameWithPortZeroIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nname: G\nport-name: \"srv01 HCA-1/P0\"\n"
                             "end-port-group\nend-port-groups\n" +
                             kGroupUse),
              ElementsAre("p.conf:10:12: error: port number 0 in port-name 'srv01 HCA-1/P0' is "
                          "out of range (1..254)"));
}

TEST(PolicyParser, GroupPkeysAreMaskedWith7fff) {
  ParseResult r = parse_group("pkey: 0x8010, 0x20\npartition: Storage, Compute\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.policy.port_groups[0].pkeys, (RangeList{{0x10, 0x10}, {0x20, 0x20}}));
  EXPECT_THAT(r.policy.port_groups[0].partitions, ElementsAre("Storage", "Compute"));
}

TEST(PolicyParser, NodeTypesAreCaseInsensitive) {
  ParseResult r = parse_group("node-type: router, Self, ca\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.policy.port_groups[0].node_types, kNodeTypeRouter | kNodeTypeCa);
  EXPECT_TRUE(r.policy.port_groups[0].self);
  EXPECT_EQ(parse_group("node-type: ALL\n").policy.port_groups[0].node_types, kNodeTypeAll);
  EXPECT_EQ(parse_group("node-type: SWITCH\n").policy.port_groups[0].node_types, kNodeTypeSwitch);
}

TEST(PolicyParser, UnknownNodeTypeIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nname: G\nnode-type: hub\n"
                             "end-port-group\nend-port-groups\n" +
                             kGroupUse),
              ElementsAre("p.conf:10:12: error: unknown node-type 'hub'\n"
                          "  hint: node types are CA, SWITCH, ROUTER, ALL and SELF"));
}

TEST(PolicyParser, BlanksInNamesAreDroppedAndReferencesAreCaseInsensitive) {
  ParseResult r = parse_policy(std::string(kDefault) +
                               "port-groups\nport-group\nname: Virtual Servers # c\n"
                               "port-guid: 0x1\nend-port-group\nend-port-groups\n"
                               "qos-match-rules\nqos-match-rule\nsource: virtualservers\n"
                               "qos-level-name: default\nend-qos-match-rule\n"
                               "end-qos-match-rules\n");
  EXPECT_THAT(r.diagnostics, IsEmpty());
  EXPECT_EQ(r.policy.port_groups[0].name, "VirtualServers");
}

TEST(PolicyParser, PortGroupWithoutNameIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nport-guid: 0x1\nend-port-group\n"
                             "end-port-groups\n"),
              ElementsAre("p.conf:8:1: error: port-group has no 'name'"));
}

TEST(PolicyParser, DuplicateGroupNameIsAnError) {
  EXPECT_THAT(
      diagnostics_of(std::string(kDefault) +
                     "port-groups\nport-group\nname: G\nport-guid: 0x1\nend-port-group\n"
                     "port-group\nname: g\nport-guid: 0x2\nend-port-group\nend-port-groups\n" +
                     kGroupUse),
      ElementsAre("p.conf:12:1: error: duplicate port-group name 'g' (first defined at line 8)"));
}

TEST(PolicyParser, UnusedGroupIsAWarning) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "port-groups\nport-group\nname: Lonely\nport-guid: 0x1\n"
                             "end-port-group\nend-port-groups\n"),
              ElementsAre("p.conf:8:1: warning: port-group 'Lonely' is never used"));
}

// ---- qos-levels -------------------------------------------------------------------------

TEST(PolicyParser, LevelWithEveryField) {
  ParseResult r = parse_policy(
      "qos-levels\nqos-level\nname: DEFAULT\nuse: everything\nsl: 7\nmtu-limit: 4\n"
      "rate-limit: 5\npacket-life: 8\npkey: 0x8020, 0x10-0x11\npath-bits: 1,2\n"
      "end-qos-level\nend-qos-levels\n");
  ASSERT_THAT(r.diagnostics, IsEmpty());
  const QosLevel& l = r.policy.levels.at(0);
  EXPECT_EQ(l.use, "everything");
  EXPECT_EQ(l.sl, 7);
  EXPECT_EQ(l.mtu_limit, 4);
  EXPECT_EQ(l.rate_limit, 5);
  EXPECT_EQ(l.packet_life, 8);
  EXPECT_EQ(l.pkeys, (RangeList{{0x10, 0x11}, {0x20, 0x20}}));
  EXPECT_EQ(l.path_bits, (RangeList{{1, 2}}));
}

std::vector<std::string> level_diagnostics(const std::string& fields) {
  return diagnostics_of("qos-levels\nqos-level\nname: DEFAULT\n" + fields +
                        "end-qos-level\nend-qos-levels\n");
}

TEST(PolicyParser, LevelWithoutSlIsAnError) {
  EXPECT_THAT(level_diagnostics(""),
              ElementsAre("p.conf:2:1: error: qos-level 'DEFAULT' has no 'sl'"));
}

TEST(PolicyParser, LevelWithoutNameIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "qos-levels\nqos-level\nsl: 1\nend-qos-level\nend-qos-levels\n"),
              ElementsAre("p.conf:8:1: error: qos-level has no 'name'"));
}

TEST(PolicyParser, SlAbove15IsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 16\n"),
              ElementsAre("p.conf:4:5: error: sl 16 is out of range (0..15)"));
}

TEST(PolicyParser, MtuLimitOutOfRangeIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\nmtu-limit: 6\n"),
              ElementsAre("p.conf:5:12: error: mtu-limit 6 is out of range (1..5)"));
}

TEST(PolicyParser, RateLimitOutOfRangeIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\nrate-limit: 1\n"),
              ElementsAre("p.conf:5:13: error: rate-limit 1 is out of range (2..22)"));
}

TEST(PolicyParser, PacketLifeAbove63IsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\npacket-life: 100\n"),
              ElementsAre("p.conf:5:14: error: packet-life 100 is out of range (0..63)"));
  EXPECT_THAT(level_diagnostics("sl: 0\npacket-life: 64\n"),
              ElementsAre("p.conf:5:14: error: packet-life 64 is out of range (0..63)"));
}

// The PathRecord's PacketLifeTime has 6 bits: 32..63 are values OpenSM answers as they are.
TEST(PolicyParser, PacketLifeUpTo63IsAccepted) {
  EXPECT_THAT(level_diagnostics("sl: 0\npacket-life: 63\n"), IsEmpty());
  EXPECT_THAT(level_diagnostics("sl: 0\npacket-life: 32\n"), IsEmpty());
}

TEST(PolicyParser, PkeyAbove16BitsIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\npkey: 0x10000\n"),
              ElementsAre("p.conf:5:7: error: pkey 0x10000 is out of range (0..0xffff)"));
}

TEST(PolicyParser, DuplicateSlIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 1\nsl: 2\n"),
              ElementsAre("p.conf:5:1: error: duplicate 'sl' in 'qos-level' (first at line 4)"));
}

TEST(PolicyParser, DuplicateLevelNameIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "qos-levels\nqos-level\nname: Default\nsl: 1\nend-qos-level\n"
                             "end-qos-levels\n"),
              ElementsAre("p.conf:8:1: error: duplicate qos-level name 'Default' (first defined "
                          "at line 2)"));
}

TEST(PolicyParser, UnusedLevelIsAWarning) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) +
                             "qos-levels\nqos-level\nname: Idle\nsl: 1\nend-qos-level\n"
                             "end-qos-levels\n"),
              ElementsAre("p.conf:8:1: warning: qos-level 'Idle' is never used"));
}

// ---- numbers ----------------------------------------------------------------------------

TEST(PolicyParser, LeadingZeroIsOctalWithAWarning) {
  ParseResult r = parse_policy(
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 010\nend-qos-level\n"
      "end-qos-levels\n");
  EXPECT_EQ(r.policy.levels.at(0).sl, 8);
  EXPECT_THAT(level_diagnostics("sl: 010\n"),
              ElementsAre("p.conf:4:5: warning: '010' is octal (8), as OpenSM reads it\n"
                          "  hint: write 8 or 0x8 to say what you mean"));
}

TEST(PolicyParser, InvalidOctalIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 09\n"),
              ElementsAre("p.conf:4:5: error: '09' is not a valid octal number\n"
                          "  hint: a leading 0 means octal, as in OpenSM; drop the leading 0"));
}

// Read as strtoull would, 02000000000000000000001 is 2^64 + 1: wrapped, it was sl 1 with only
// the octal warning. A number the 64-bit reading cannot hold is an error at its column.
TEST(PolicyParser, OctalBeyond64BitsIsAnErrorNotWrapped) {
  EXPECT_THAT(level_diagnostics("sl: 02000000000000000000001\n"),
              ElementsAre("p.conf:4:5: error: '02000000000000000000001' does not fit in 64 bits"));
}

TEST(PolicyParser, LargestOctalIsReadThenRangeChecked) {
  EXPECT_THAT(level_diagnostics("sl: 01777777777777777777777\n"),
              ElementsAre("p.conf:4:5: warning: '01777777777777777777777' is octal "
                          "(18446744073709551615), as OpenSM reads it\n"
                          "  hint: write 18446744073709551615 or 0xffffffffffffffff to say what "
                          "you mean",
                          "p.conf:4:5: error: sl 18446744073709551615 is out of range (0..15)"));
}

TEST(PolicyParser, DecimalBeyond64BitsIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 18446744073709551617\n"),
              ElementsAre("p.conf:4:5: error: '18446744073709551617' does not fit in 64 bits"));
}

TEST(PolicyParser, HexBeyond64BitsIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0x10000000000000001\n"),
              ElementsAre("p.conf:4:5: error: '0x10000000000000001' does not fit in 64 bits"));
}

TEST(PolicyParser, NotANumberIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: two\n"),
              ElementsAre("p.conf:4:5: error: 'two' is not a number"));
}

// ---- qos-match-rules --------------------------------------------------------------------

constexpr const char* kGroups =
    "port-groups\nport-group\nname: A\nport-guid: 0x1\nend-port-group\n"
    "port-group\nname: B\nport-guid: 0x2\nend-port-group\nend-port-groups\n";

std::string with_rules(const std::string& rules) {
  return std::string(kDefault) + kGroups + "qos-match-rules\n" + rules + "end-qos-match-rules\n";
}

// Diagnostics other than the unused-group warnings that kGroups causes in most tests.
std::vector<std::string> rule_diagnostics(const std::string& text) {
  std::vector<std::string> out;
  for (auto& d : diagnostics_of(text))
    if (d.find("is never used") == std::string::npos) out.push_back(d);
  return out;
}

TEST(PolicyParser, RuleWithEveryCriterion) {
  ParseResult r = parse_policy(
      with_rules("qos-match-rule\nuse: all: of, them\nqos-class: 7-9,11\nsource: A\n"
                 "destination: A, B\nservice-id: 0x10000-0x1FFFF\nservice-id: 0x5\n"
                 "pkey: 0x8F00-0x8FFF\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  ASSERT_THAT(r.diagnostics, IsEmpty());
  const MatchRule& m = r.policy.rules.at(0);
  EXPECT_EQ(m.use, "all: of, them");
  EXPECT_EQ(m.qos_classes, (RangeList{{7, 9}, {11, 11}}));
  EXPECT_THAT(m.sources, ElementsAre("A"));
  EXPECT_THAT(m.destinations, ElementsAre("A", "B"));
  EXPECT_EQ(m.service_ids, (RangeList{{5, 5}, {0x10000, 0x1FFFF}}));
  EXPECT_EQ(m.pkeys, (RangeList{{0xF00, 0xFFF}}));
  EXPECT_EQ(m.level_name, "DEFAULT");
}

TEST(PolicyParser, ReversedRangeIsSwappedWithAWarning) {
  ParseResult r = parse_policy(with_rules(
      "qos-match-rule\nqos-class: 300-200\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  EXPECT_EQ(r.policy.rules.at(0).qos_classes, (RangeList{{200, 300}}));
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nqos-class: 300-200\n"
                                          "qos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:19:12: warning: reversed range 300-200, read as 200-300\n"
                          "  hint: OpenSM swaps reversed ranges silently"));
}

TEST(PolicyParser, QosClassAbove12BitsIsAnError) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nqos-class: 4096\n"
                                          "qos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:19:12: error: qos-class 4096 is out of range (0..4095)"));
}

// tclass: an rdma-qos extension, 8 bits, lists and ranges like qos-class.
TEST(PolicyParser, TClassCriterionTakesListsAndRanges) {
  ParseResult r = parse_policy(with_rules(
      "qos-match-rule\ntclass: 96,104-111\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  ASSERT_TRUE(r.ok());
  const MatchRule& m = r.policy.rules.at(0);
  EXPECT_EQ(m.tclasses, (RangeList{{96, 96}, {104, 111}}));
  ASSERT_TRUE(m.tclass_location);
  EXPECT_EQ(m.tclass_location->line, 19);
  EXPECT_EQ(m.tclass_location->column, 1);
  EXPECT_FALSE(m.names_no_criterion());
}

// An earlier rule that names tclass only shadows a later one whose traffic classes it covers.
TEST(PolicyParser, TClassRuleShadowsOnlyRulesWithinItsTrafficClasses) {
  EXPECT_THAT(rule_diagnostics(with_rules(
                  "qos-match-rule\ntclass: 5\nqos-level-name: DEFAULT\nend-qos-match-rule\n"
                  "qos-match-rule\nqos-class: 3\nqos-level-name: DEFAULT\nend-qos-match-rule\n")),
              IsEmpty());
  auto shadowed = rule_diagnostics(with_rules(
      "qos-match-rule\ntclass: 1-9\nqos-level-name: DEFAULT\nend-qos-match-rule\n"
      "qos-match-rule\ntclass: 5\nqos-class: 3\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  ASSERT_EQ(shadowed.size(), 1u);
  EXPECT_NE(shadowed[0].find("p.conf:22:1: warning:"), std::string::npos) << shadowed[0];
}

TEST(PolicyParser, TClassAbove8BitsIsAnError) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\ntclass: 256\n"
                                          "qos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:19:9: error: tclass 256 is out of range (0..255)"));
}

TEST(PolicyParser, TClassIsNoFieldOfOtherBlocks) {
  ParseResult r = parse_policy(
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\ntclass: 5\nend-qos-level\nend-qos-levels\n");
  EXPECT_FALSE(r.ok());
}

// A policy for OpenSM's own parser: every tclass keyword is warned about where it stands, and
// a policy in OpenSM's syntax gets no warning.
TEST(PolicyParser, OpenSmCompatibilityWarnsAtEveryTClassKeyword) {
  ParseResult r = parse_policy(
      with_rules("qos-match-rule\nqos-class: 1\nqos-level-name: DEFAULT\nend-qos-match-rule\n"
                 "qos-match-rule\n  tclass: 96\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  ASSERT_TRUE(r.ok());
  std::vector<std::string> out;
  for (const auto& d : opensm_compatibility(r.policy))
    out.push_back(format_diagnostic(d, "p.conf"));
  EXPECT_THAT(out, ElementsAre("p.conf:23:3: warning: 'tclass' is an rdma-qos extension: OpenSM "
                               "rejects this policy file\n  hint: give OpenSM a copy without "
                               "tclass criteria, or let rdma-qos-sad or the rdma-qos OpenSM "
                               "plugin (its own policy= file) apply it"));
  ParseResult plain = parse_policy(
      with_rules("qos-match-rule\nqos-class: 1\nqos-level-name: DEFAULT\nend-qos-match-rule\n"));
  EXPECT_THAT(opensm_compatibility(plain.policy), IsEmpty());
}

TEST(PolicyParser, OverlappingRangesInOneRuleAreAWarning) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nservice-id: 0x10-0x20, 0x18\n"
                                          "qos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:18:1: warning: overlapping service-id ranges in one rule: "
                          "0x10-0x20 and 0x18"));
}

TEST(PolicyParser, RuleWithoutLevelIsAnError) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nqos-class: 1\nend-qos-match-rule\n")),
              ElementsAre("p.conf:18:1: error: qos-match-rule has no 'qos-level-name'"));
}

TEST(PolicyParser, UndefinedLevelIsAnError) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nqos-class: 1\n"
                                          "qos-level-name: NoSuchLevel\nend-qos-match-rule\n")),
              ElementsAre("p.conf:20:1: error: qos-level 'NoSuchLevel' is not defined"));
}

TEST(PolicyParser, UndefinedGroupsAreErrors) {
  EXPECT_THAT(rule_diagnostics(with_rules("qos-match-rule\nsource: A, Nope\ndestination: Storage\n"
                                          "qos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:19:12: error: source port-group 'Nope' is not defined",
                          "p.conf:20:14: error: destination port-group 'Storage' is not "
                          "defined"));
}

TEST(PolicyParser, ShadowedRuleIsAWarning) {
  EXPECT_THAT(
      rule_diagnostics(with_rules(
          "qos-match-rule\nservice-id: 0x10-0x20\nqos-level-name: DEFAULT\nend-qos-match-rule\n"
          "qos-match-rule\nservice-id: 0x12\nsource: A\nqos-level-name: DEFAULT\n"
          "end-qos-match-rule\n")),
      ElementsAre("p.conf:22:1: warning: rule can never match: the rule at line 18 matches "
                  "every query it matches"));
}

TEST(PolicyParser, CatchAllRuleShadowsLaterRules) {
  EXPECT_THAT(rule_diagnostics(with_rules(
                  "qos-match-rule\nqos-level-name: DEFAULT\nend-qos-match-rule\n"
                  "qos-match-rule\nsource: A\nqos-level-name: DEFAULT\nend-qos-match-rule\n")),
              ElementsAre("p.conf:21:1: warning: rule can never match: the rule at line 18 matches "
                          "every query it matches\n"
                          "  hint: a rule without criteria matches every query"));
}

// ---- qos-ulps ---------------------------------------------------------------------------

ParseResult parse_ulps(const std::string& body) {
  return parse_policy("qos-ulps\ndefault : 0\n" + body + "end-qos-ulps\n");
}

TEST(PolicyParser, UlpShorthandsBecomeRulesInFileOrder) {
  ParseResult r = parse_ulps(
      "sdp, port-num 30000 : 1\nSDP : 2\nrds : 3\nrds, port-num 5 : 4\niser : 5\n"
      "iser, port-num 900-901 : 6\nsrp, target-port-guid 0x1-0x3, 0x9 : 7\n"
      "ipoib : 8\nipoib, pkey 0x8010 : 9\nany, service-id 0x6234 : 10\n"
      "any, pkey 0x0ABC : 11\nany, target-port-guid 0x5 : 12\nany, source-port-guid 0x6 : 13\n");
  ASSERT_THAT(r.diagnostics, IsEmpty());
  const auto& u = r.policy.ulp_rules;
  ASSERT_EQ(u.size(), 13u);
  EXPECT_EQ(u[0].service_ids, (RangeList{{0x10000 + 30000, 0x10000 + 30000}}));
  EXPECT_EQ(u[0].ulp_sl, 1);
  EXPECT_EQ(u[1].service_ids, (RangeList{{0x10000, 0x1FFFF}}));
  EXPECT_EQ(u[2].service_ids, (RangeList{{0x10648CA, 0x10648CA}}));
  EXPECT_EQ(u[3].service_ids, (RangeList{{0x1060005, 0x1060005}}));
  EXPECT_EQ(u[4].service_ids, (RangeList{{0x1060CBC, 0x1060CBC}}));
  EXPECT_EQ(u[5].service_ids, (RangeList{{0x1060384, 0x1060385}}));
  EXPECT_EQ(u[6].destination_guids, (RangeList{{1, 3}, {9, 9}}));
  EXPECT_FALSE(u[6].source_guids);
  EXPECT_EQ(u[7].pkeys, (RangeList{{0x7FFF, 0x7FFF}}));
  EXPECT_TRUE(u[7].ipoib_partition_check);
  EXPECT_EQ(u[8].pkeys, (RangeList{{0x10, 0x10}}));
  EXPECT_EQ(u[9].service_ids, (RangeList{{0x6234, 0x6234}}));
  EXPECT_EQ(u[10].pkeys, (RangeList{{0xABC, 0xABC}}));
  EXPECT_FALSE(u[10].ipoib_partition_check);
  EXPECT_EQ(u[11].destination_guids, (RangeList{{5, 5}}));
  EXPECT_EQ(u[12].source_guids, (RangeList{{6, 6}}));
  EXPECT_FALSE(u[12].destination_guids);
  EXPECT_EQ(u[12].ulp_sl, 13);
}

TEST(PolicyParser, SourceTargetPortGuidFillsBothSidesWithAWarning) {
  ParseResult r = parse_ulps("any, source-target-port-guid 0x7 : 15\n");
  ASSERT_EQ(r.policy.ulp_rules.size(), 1u);
  EXPECT_EQ(r.policy.ulp_rules[0].source_guids, (RangeList{{7, 7}}));
  EXPECT_EQ(r.policy.ulp_rules[0].destination_guids, (RangeList{{7, 7}}));
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(r.diagnostics[0], "p.conf"),
            "p.conf:3:1: warning: 'any, source-target-port-guid' only matches paths with both "
            "ends in the set\n  hint: OpenSM requires source AND target in the set (its manual "
            "says 'or')");
}

TEST(PolicyParser, UlpSlAbove15IsAnError) {
  EXPECT_THAT(diagnostics_of("qos-ulps\ndefault : 0\nsdp : 16\nend-qos-ulps\n"),
              ElementsAre("p.conf:3:7: error: SL 16 is out of range (0..15)"));
}

TEST(PolicyParser, SdpPortAbove16BitsIsAnError) {
  EXPECT_THAT(diagnostics_of("qos-ulps\ndefault : 0\nsdp, port-num 70000 : 1\nend-qos-ulps\n"),
              ElementsAre("p.conf:3:15: error: port-num 70000 is out of range (0..0xffff)"));
}

TEST(PolicyParser, UnknownUlpIsAnError) {
  EXPECT_THAT(diagnostics_of("qos-ulps\ndefault : 0\nnfs : 1\nend-qos-ulps\n"),
              ElementsAre("p.conf:3:1: error: unknown qos-ulps entry 'nfs'\n"
                          "  hint: entries are default, sdp, rds, iser, srp, ipoib and any"));
}

TEST(PolicyParser, WrongUlpArgumentIsAnError) {
  EXPECT_THAT(diagnostics_of("qos-ulps\ndefault : 0\nsrp, pkey 0x1 : 1\nend-qos-ulps\n"),
              ElementsAre("p.conf:3:1: error: 'srp, pkey' is not a qos-ulps entry\n"
                          "  hint: after 'srp' write one of: target-port-guid"));
}

TEST(PolicyParser, DuplicateUlpDefaultIsAnError) {
  EXPECT_THAT(diagnostics_of("qos-ulps\ndefault : 0\ndefault : 1\nend-qos-ulps\n"),
              ElementsAre("p.conf:3:1: error: duplicate 'default' in 'qos-ulps' (first at "
                          "line 2)"));
}

// ---- qos-setup --------------------------------------------------------------------------

constexpr const char* kSetup =
    "qos-setup\n"
    "  vlarb-tables\n"
    "    vlarb-scope\n"
    "      group: A\n"
    "      across: B\n"
    "      vlarb-high: 0:255, 1:127\n"
    "      vlarb-low: 2:64\n"
    "      vl-high-limit: 10\n"
    "    end-vlarb-scope\n"
    "  end-vlarb-tables\n"
    "  sl2vl-tables\n"
    "    sl2vl-scope\n"
    "      group: A\n"
    "      across-to: B\n"
    "      across-from: A\n"
    "      from: *\n"
    "      to: 1-3, 5\n"
    "      sl2vl-table: 0,1,2,3,4,5,6,7,7,7,7,7,7,7,7,7\n"
    "    end-sl2vl-scope\n"
    "  end-sl2vl-tables\n"
    "end-qos-setup\n";

TEST(PolicyParser, QosSetupIsParsed) {
  ParseResult r = parse_policy(std::string(kDefault) + kGroups + kSetup);
  ASSERT_THAT(r.diagnostics, IsEmpty());
  ASSERT_EQ(r.policy.setup.vlarb_scopes.size(), 1u);
  const VlArbScope& v = r.policy.setup.vlarb_scopes[0];
  EXPECT_THAT(v.groups, ElementsAre("A"));
  EXPECT_THAT(v.across, ElementsAre("B"));
  EXPECT_EQ(v.vlarb_high, (std::vector<std::pair<uint8_t, uint8_t>>{{0, 255}, {1, 127}}));
  EXPECT_EQ(v.vlarb_low, (std::vector<std::pair<uint8_t, uint8_t>>{{2, 64}}));
  EXPECT_EQ(v.vl_high_limit, 10);
  ASSERT_EQ(r.policy.setup.sl2vl_scopes.size(), 1u);
  const Sl2VlScope& s = r.policy.setup.sl2vl_scopes[0];
  EXPECT_TRUE(s.from_all);
  EXPECT_EQ(s.to_ports, (std::vector<uint8_t>{1, 2, 3, 5}));
  EXPECT_THAT(s.across_to, ElementsAre("B"));
  EXPECT_THAT(s.across_from, ElementsAre("A"));
  EXPECT_EQ(s.sl2vl.size(), 16u);
}

// The RFC: an sl2vl-table of fewer than 16 values leaves the remaining SLs on VL 0.
TEST(PolicyParser, ShortSl2VlTableLeavesTheOtherSlsOnVlZero) {
  auto r = parse_policy(std::string(kDefault) + kGroups +
                        "qos-setup\nsl2vl-tables\nsl2vl-scope\ngroup: A\nsl2vl-table: 3,2,1\n"
                        "end-sl2vl-scope\nend-sl2vl-tables\nend-qos-setup\n");
  ASSERT_EQ(r.policy.setup.sl2vl_scopes.size(), 1u);
  const auto& vls = r.policy.setup.sl2vl_scopes[0].sl2vl;
  ASSERT_EQ(vls.size(), 16u);
  EXPECT_EQ(vls[0], 3);
  EXPECT_EQ(vls[2], 1);
  for (size_t sl = 3; sl < 16; ++sl) EXPECT_EQ(vls[sl], 0) << "SL " << sl;
}

TEST(PolicyParser, QosSetupValuesAreValidated) {
  EXPECT_THAT(
      rule_diagnostics(std::string(kDefault) + kGroups +
                       "qos-setup\nvlarb-tables\nvlarb-scope\ngroup: A, Nope\n"
                       "vlarb-high: 15:1, 1:256\nend-vlarb-scope\nend-vlarb-tables\n"
                       "sl2vl-tables\nsl2vl-scope\ngroup: A\n"
                       "sl2vl-table: 0,1,16,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
                       "end-sl2vl-scope\nend-sl2vl-tables\nend-qos-setup\n"),
      ElementsAre("p.conf:20:11: error: qos-setup port-group 'Nope' is not defined",
                  "p.conf:21:13: error: VL 15 is out of range (0..14)",
                  "p.conf:21:19: error: weight 256 is out of range (0..255)",
                  "p.conf:27:1: error: sl2vl-table has 17 entries, at most 16 (one VL per SL)",
                  "p.conf:27:18: error: VL 16 is out of range (0..15)"));
}

// ---- structure errors -------------------------------------------------------------------

TEST(PolicyParser, UpperCaseKeywordIsUnknownWithAHint) {
  EXPECT_THAT(diagnostics_of(std::string("QOS-LEVELS\n") + kDefault),
              ElementsAre("p.conf:1:1: error: unknown keyword 'QOS-LEVELS'\n"
                          "  hint: keywords are lower case: 'qos-levels'"));
}

TEST(PolicyParser, UnknownFieldIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\ncolour: red\n"),
              ElementsAre("p.conf:5:1: error: unknown keyword 'colour'"));
}

TEST(PolicyParser, FieldOfAnotherBlockIsAnError) {
  EXPECT_THAT(level_diagnostics("sl: 0\nsource: A\n"),
              ElementsAre("p.conf:5:1: error: 'source' is not allowed in 'qos-level'"));
}

TEST(PolicyParser, MissingEndIsReportedAndParsingContinues) {
  EXPECT_THAT(diagnostics_of("qos-levels\nqos-level\nname: DEFAULT\nsl: 0\n"
                             "qos-level\nname: X\nsl: 16\nend-qos-level\nend-qos-levels\n"),
              ElementsAre("p.conf:5:1: error: missing 'end-qos-level' before 'qos-level'\n"
                          "  hint: 'qos-level' opened at line 2",
                          "p.conf:5:1: warning: qos-level 'X' is never used",
                          "p.conf:7:5: error: sl 16 is out of range (0..15)"));
}

TEST(PolicyParser, UnclosedSectionIsAnError) {
  EXPECT_THAT(diagnostics_of("qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"),
              ElementsAre("p.conf:1:1: error: 'qos-levels' is never closed\n"
                          "  hint: add 'end-qos-levels'"));
}

TEST(PolicyParser, EndWithoutStartIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) + "end-port-groups\n"),
              ElementsAre("p.conf:7:1: error: 'end-port-groups' without a matching "
                          "'port-groups'"));
}

TEST(PolicyParser, BlockOutsideItsSectionIsAnError) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) + "qos-level\nname: X\nsl: 1\nend-qos-level\n"),
              ElementsAre("p.conf:7:1: error: 'qos-level' must be inside 'qos-levels'",
                          "p.conf:7:1: warning: qos-level 'X' is never used"));
}

// A block opened again before its end closes the open one, at any depth: the parser's stack
// never holds the same kind of block twice.
TEST(PolicyParser, BlockOpenedAgainOutsideItsSectionClosesTheOpenOne) {
  EXPECT_THAT(diagnostics_of(std::string(kDefault) + "qos-level\nqos-level\n"),
              ElementsAre("p.conf:7:1: error: 'qos-level' must be inside 'qos-levels'",
                          "p.conf:7:1: error: qos-level has no 'name'",
                          "p.conf:7:1: error: qos-level has no 'sl'",
                          "p.conf:8:1: error: missing 'end-qos-level' before 'qos-level'\n"
                          "  hint: 'qos-level' opened at line 7",
                          "p.conf:8:1: error: 'qos-level' must be inside 'qos-levels'",
                          "p.conf:8:1: error: 'qos-level' is never closed\n"
                          "  hint: add 'end-qos-level'",
                          "p.conf:8:1: error: qos-level has no 'name'",
                          "p.conf:8:1: error: qos-level has no 'sl'"));
}

// A file of misplaced block keywords (200,000 lines) gets a bounded list of diagnostics,
// ending with one "too many errors", instead of several per line.
std::string repeated(const std::vector<std::string>& lines, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text += lines[i % lines.size()] + "\n";
  return text;
}

TEST(PolicyParser, ManyMisplacedSectionKeywordsGiveBoundedDiagnostics) {
  ParseResult r = parse_policy(repeated({"qos-levels", "end-qos-levels", "port-groups"}, 200'000));
  EXPECT_FALSE(r.ok());
  ASSERT_LE(r.diagnostics.size(), 101u);
  EXPECT_EQ(r.diagnostics.back().message, "too many errors (100); stopping here");
}

TEST(PolicyParser, ManyMisplacedBlockKeywordsGiveBoundedDiagnostics) {
  for (const char* keyword : {"qos-level", "port-group", "qos-match-rule", "vlarb-scope"}) {
    ParseResult r = parse_policy(repeated({keyword}, 200'000));
    EXPECT_FALSE(r.ok());
    // At most 100 errors, the "too many errors" that ends them, and the warnings of the
    // blocks read until then.
    size_t errors = 0;
    for (const auto& d : r.diagnostics) errors += d.severity == Severity::kError ? 1 : 0;
    EXPECT_EQ(errors, 101u) << keyword;
    ASSERT_LE(r.diagnostics.size(), 202u) << keyword;
    EXPECT_EQ(r.diagnostics.back().message, "too many errors (100); stopping here") << keyword;
  }
}

// Warnings never stop a usable policy from loading; past 1000 they are summed up in one
// (here: 2000 octal values and 2000 levels never used).
TEST(PolicyParser, ManyWarningsAreBoundedAndThePolicyStillLoads) {
  std::string text = "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n";
  for (int i = 0; i < 2000; ++i)
    text += fmt::format("qos-level\nname: L{}\nsl: 01\nend-qos-level\n", i);
  text += "end-qos-levels\n";
  ParseResult r = parse_policy(text);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.policy.levels.size(), 2001u);
  ASSERT_EQ(r.diagnostics.size(), 1001u);
  EXPECT_EQ(r.diagnostics.back().message, "too many warnings: 3000 more not shown");
}

}  // namespace
}  // namespace rdmaqos::policy
