// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Class names: site aliases, then the policy's levels reached by a qos-class rule.
#include "rdma-qos/slurm/class_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace rdmaqos::slurm {
namespace {

using ::testing::HasSubstr;

// The problem's message, "" without one.
std::string problem_of(const ClassNames& n) {
  return n.problem() ? n.problem()->message : "";
}

// Classes 3 and 8-9 reach level hpc, class 4 level storage; level bulk only by Service-ID.
constexpr const char* kPolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: hpc
    sl: 3
  end-qos-level
  qos-level
    name: Storage
    sl: 5
  end-qos-level
  qos-level
    name: bulk
    sl: 1
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x1000
    qos-level-name: bulk
  end-qos-match-rule
  qos-match-rule
    qos-class: 8-9, 3
    qos-level-name: hpc
  end-qos-match-rule
  qos-match-rule
    qos-class: 4
    qos-level-name: Storage
  end-qos-match-rule
end-qos-match-rules
)";

SiteRules rules(std::vector<std::string_view> args) {
  return parse_site_rules(args).rules;
}
ClassSpec spec(std::string_view s) {
  return *parse_class_spec(s);
}

TEST(ClassNames, ALevelNameIsTheSmallestClassARuleSendsThere) {
  ClassNames n = ClassNames::from_policy_text(rules({}), kPolicy, "p.conf");
  EXPECT_EQ(problem_of(n), "");
  EXPECT_EQ(n.resolve(spec("hpc")), 3);
  EXPECT_EQ(n.resolve(spec("storage")), 4);  // level names compare case-insensitively
  EXPECT_EQ(n.resolve(spec("STORAGE")), 4);
}

TEST(ClassNames, ALevelNoClassRuleReachesIsNoClass) {
  ClassNames n = ClassNames::from_policy_text(rules({}), kPolicy, "p.conf");
  EXPECT_FALSE(n.resolve(spec("bulk")));
  EXPECT_FALSE(n.resolve(spec("DEFAULT")));
  EXPECT_FALSE(n.resolve(spec("gold")));
}

TEST(ClassNames, NumbersNeedNoPolicy) {
  ClassNames n =
      ClassNames::without_policy(rules({}), make_error(ErrorCode::kNotFound, "no policy"));
  EXPECT_EQ(n.resolve(spec("12")), 12);
}

TEST(ClassNames, SiteAliasesComeBeforeLevelNames) {
  ClassNames n =
      ClassNames::from_policy_text(rules({"class=hpc:9", "class=bulk:2"}), kPolicy, "p.conf");
  EXPECT_EQ(n.resolve(spec("hpc")), 9);
  EXPECT_EQ(n.resolve(spec("bulk")), 2);
  EXPECT_EQ(n.describe(2), "2 (bulk)");
  EXPECT_EQ(n.describe(4), "4 (Storage)");
  EXPECT_EQ(n.describe(100), "100");
}

TEST(ClassNames, APolicyWithErrorsLeavesTheAliasesAndSaysWhy) {
  ClassNames n =
      ClassNames::from_policy_text(rules({"class=bulk:2"}), "qos-levels\n  qos-level\n", "b.conf");
  EXPECT_THAT(problem_of(n), HasSubstr("the policy b.conf has b.conf:"));
  ASSERT_TRUE(n.problem());
  EXPECT_EQ(n.problem()->code, ErrorCode::kMalformed);
  EXPECT_EQ(n.resolve(spec("bulk")), 2);
  EXPECT_FALSE(n.resolve(spec("hpc")));
}

TEST(ClassNames, LoadsThePolicyNamedByTheSiteOrSaysWhyNot) {
  const std::string path = ::testing::TempDir() + "class_names_policy.conf";
  std::ofstream(path) << kPolicy;
  ClassNames n = ClassNames::load(rules({"policy=" + path}));
  EXPECT_EQ(problem_of(n), "");
  EXPECT_EQ(n.resolve(spec("hpc")), 3);
  std::remove(path.c_str());
  ClassNames missing = ClassNames::load(rules({"policy=" + path}));
  EXPECT_THAT(problem_of(missing), HasSubstr("cannot read the policy " + path));
  ASSERT_TRUE(missing.problem());
  EXPECT_EQ(missing.problem()->code, ErrorCode::kNotFound);
}

TEST(ClassNames, WithoutPolicyArgumentThePolicyFileKnobOfTheSiteConfigIsRead) {
  const std::string policy = ::testing::TempDir() + "class_names_knob_policy.conf";
  const std::string config = ::testing::TempDir() + "class_names_rdma-qos.conf";
  std::ofstream(policy) << kPolicy;
  std::ofstream(config) << "policy_file " << policy << "\n";
  ClassNames n = ClassNames::load(rules({"config=" + config}));
  EXPECT_EQ(n.policy_file(), policy);
  EXPECT_EQ(n.resolve(spec("storage")), 4);
  std::remove(policy.c_str());
  std::remove(config.c_str());
}

}  // namespace
}  // namespace rdmaqos::slurm
