// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's plugstack.conf arguments: what each one means, and that every bad one is named.
#include "rdma-qos/slurm/site_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rdmaqos::slurm {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ParsedRules parse(std::vector<std::string_view> args) {
  return parse_site_rules(args);
}

std::optional<uint16_t> by_number(const ClassSpec& c) {
  return c.number;
}

TEST(SiteRules, NoArgumentsMeanNoDefaultsNoReservationsAndStockSettings) {
  ParsedRules p = parse({});
  EXPECT_THAT(p.errors, IsEmpty());
  EXPECT_FALSE(p.rules.default_class);
  EXPECT_THAT(p.rules.allow, IsEmpty());
  EXPECT_FALSE(p.rules.overwrite);
  EXPECT_EQ(p.rules.preload, "");
  EXPECT_EQ(p.rules.link, LinkChoice::kAuto);
  EXPECT_EQ(p.rules.rdma_qos, "/usr/bin/rdma-qos");
  EXPECT_EQ(p.rules.timeout_seconds, 10);
}

TEST(SiteRules, ReadsEveryKey) {
  ParsedRules p =
      parse({"default=2", "partition=io:storage", "allow=storage:group=io,user=bob", "class=bulk:7",
             "policy=/etc/p.conf", "config=/etc/c.conf", "rdma-qos=/opt/bin/rdma-qos", "link=roce",
             "overwrite=yes", "preload=/opt/m.so", "timeout=3"});
  ASSERT_THAT(p.errors, IsEmpty());
  const SiteRules& r = p.rules;
  ASSERT_TRUE(r.default_class);
  EXPECT_EQ(r.default_class->number, 2);
  ASSERT_EQ(r.partitions.size(), 1u);
  EXPECT_EQ(r.partitions[0].partition, "io");
  EXPECT_EQ(r.partitions[0].cls.text, "storage");
  EXPECT_FALSE(r.partitions[0].cls.number);
  ASSERT_EQ(r.allow.size(), 1u);
  EXPECT_EQ(r.allow[0].argument, 3);
  EXPECT_EQ(r.allow[0].text, "allow=storage:group=io,user=bob");
  ASSERT_EQ(r.allow[0].who.size(), 2u);
  EXPECT_EQ(r.allow[0].who[0].kind, PrincipalKind::kGroup);
  EXPECT_EQ(r.allow[0].who[0].name, "io");
  EXPECT_EQ(r.allow[0].who[1].kind, PrincipalKind::kUser);
  ASSERT_EQ(r.aliases.size(), 1u);
  EXPECT_EQ(r.aliases[0].name, "bulk");
  EXPECT_EQ(r.aliases[0].number, 7);
  EXPECT_EQ(r.policy_file, "/etc/p.conf");
  EXPECT_EQ(r.config_file, "/etc/c.conf");
  EXPECT_EQ(r.rdma_qos, "/opt/bin/rdma-qos");
  EXPECT_EQ(r.link, LinkChoice::kRoce);
  EXPECT_TRUE(r.overwrite);
  EXPECT_EQ(r.preload, "/opt/m.so");
  EXPECT_EQ(r.timeout_seconds, 3);
}

TEST(SiteRules, PreloadYesIsTheInstalledModule) {
  EXPECT_EQ(parse({"preload=yes"}).rules.preload, default_preload_path());
  EXPECT_EQ(parse({"preload=yes", "preload=no"}).rules.preload, "");
}

TEST(SiteRules, EveryBadArgumentIsReportedWithItsPosition) {
  ParsedRules p = parse({"default=", "partition=io", "allow=3", "allow=3:team=x", "class=7:7",
                         "policy=relative", "link=eth", "overwrite=maybe", "preload=m.so",
                         "timeout=0", "colour=blue", "plain", "default=4096"});
  auto at = [](int argument, std::string text) {
    return AllOf(Field(&Diagnostic::origin,
                       "plugstack.conf argument " + std::to_string(argument) + " '" + text + "'"),
                 Field(&Diagnostic::severity, Severity::kError),
                 Field(&Diagnostic::location,
                       AllOf(Field(&SourceLocation::line, 0), Field(&SourceLocation::column, 0))));
  };
  EXPECT_THAT(p.errors,
              ElementsAre(at(1, "default="), at(2, "partition=io"), at(3, "allow=3"),
                          at(4, "allow=3:team=x"), at(5, "class=7:7"), at(6, "policy=relative"),
                          at(7, "link=eth"), at(8, "overwrite=maybe"), at(9, "preload=m.so"),
                          at(10, "timeout=0"), at(11, "colour=blue"), at(12, "plain"),
                          at(13, "default=4096")));
  EXPECT_THAT(p.errors[3].message, HasSubstr("user, group or account, not 'team'"));
  EXPECT_THAT(p.errors[10].message, HasSubstr("unknown key 'colour'"));
  EXPECT_EQ(p.errors[11].message, "not KEY=VALUE");
}

TEST(SiteRules, ClassSpecsAreNumbersUpTo4095OrShortNames) {
  EXPECT_EQ(parse_class_spec("4095")->number, 4095);
  EXPECT_EQ(parse_class_spec("010")->number, 10);  // decimal, never octal
  EXPECT_FALSE(parse_class_spec("4096"));
  EXPECT_FALSE(parse_class_spec("storage")->number);
  EXPECT_EQ(parse_class_spec("Gold-1.x_y")->text, "Gold-1.x_y");
  EXPECT_FALSE(parse_class_spec(""));
  EXPECT_FALSE(parse_class_spec("two words"));
  EXPECT_FALSE(parse_class_spec("a;rm"));
  EXPECT_FALSE(parse_class_spec(std::string(65, 'a')));
}

TEST(SiteRules, AClassNoAllowRuleNamesIsOpenToEveryone) {
  ParsedRules p = parse({"allow=4:group=io"});
  Identity alice{"alice", {"users"}, ""};
  EXPECT_EQ(refusing_rule(p.rules, 3, alice, by_number), nullptr);
}

TEST(SiteRules, AReservedClassIsRefusedToOthersWithTheFirstRuleNamingIt) {
  ParsedRules p = parse({"allow=4:group=io", "allow=4:user=bob"});
  Identity alice{"alice", {"users"}, "physics"};
  const AllowRule* r = refusing_rule(p.rules, 4, alice, by_number);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->argument, 1);
}

TEST(SiteRules, AnyRuleNamingTheClassAdmitsItsPrincipals) {
  ParsedRules p = parse({"allow=4:group=io", "allow=4:user=bob,account=storage"});
  EXPECT_EQ(refusing_rule(p.rules, 4, {"bob", {"users"}, ""}, by_number), nullptr);
  EXPECT_EQ(refusing_rule(p.rules, 4, {"carol", {"users", "io"}, ""}, by_number), nullptr);
  EXPECT_EQ(refusing_rule(p.rules, 4, {"dave", {"users"}, "storage"}, by_number), nullptr);
  EXPECT_NE(refusing_rule(p.rules, 4, {"erin", {"users"}, "physics"}, by_number), nullptr);
}

TEST(SiteRules, AnUnknownAccountMatchesNoAccountRule) {
  ParsedRules p = parse({"allow=4:account=storage"});
  EXPECT_NE(refusing_rule(p.rules, 4, {"bob", {"users"}, ""}, by_number), nullptr);
}

TEST(SiteRules, RulesNamingUnresolvableClassesReserveNothing) {
  ParsedRules p = parse({"allow=gold:group=io"});
  EXPECT_EQ(refusing_rule(p.rules, 4, {"bob", {"users"}, ""}, by_number), nullptr);
}

TEST(SiteRules, APartitionRuleWinsOverTheSiteDefault) {
  ParsedRules p = parse({"default=1", "partition=io:4"});
  EXPECT_EQ(site_default(p.rules, "io")->number, 4);
  EXPECT_EQ(site_default(p.rules, "debug")->number, 1);
  EXPECT_EQ(site_default(parse({"partition=io:4"}).rules, "debug"), nullptr);
}

}  // namespace
}  // namespace rdmaqos::slurm
