// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The job's environment: run-env's answer read, merged with the user's own values, and run-env
// itself run bounded and with a clean environment.
#include "rdma-qos/slurm/job_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>

namespace rdmaqos::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kAnswer =
    R"({"link":"RoCE","sl":3,"because":"class 3","class":3,"variables":[)"
    R"({"name":"UCX_IB_SL","action":"set","value":3,"why":"w1"},)"
    R"({"name":"UCX_IB_TRAFFIC_CLASS","action":"not-set","why":"w2"},)"
    R"({"name":"NCCL_IB_SL","action":"set","value":3,"why":"w3"}]})";

std::vector<std::string> names(const std::vector<StackValue>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.name + "=" + s.value);
  return out;
}

TEST(JobEnv, RunEnvJsonGivesTheVariablesItSets) {
  RunEnvAnswer a = parse_run_env_json(kAnswer);
  EXPECT_EQ(a.error, "");
  EXPECT_THAT(names(a.values), ElementsAre("UCX_IB_SL=3", "NCCL_IB_SL=3"));
  EXPECT_EQ(a.values[0].why, "w1");
}

TEST(JobEnv, RunEnvErrorsAndMalformedAnswersAreErrors) {
  EXPECT_EQ(parse_run_env_json(R"({"error":"no SA"})").error, "no SA");
  EXPECT_THAT(parse_run_env_json("UCX_IB_SL=3").error, HasSubstr("no JSON object"));
  EXPECT_THAT(parse_run_env_json("{}").error, HasSubstr("no 'variables'"));
  EXPECT_THAT(
      parse_run_env_json(R"({"variables":[{"name":"X","action":"set","value":256}]})").error,
      HasSubstr("0..255"));
  EXPECT_THAT(parse_run_env_json(R"({"variables":[{"action":"set","value":1}]})").error,
              HasSubstr("without name"));
}

TEST(JobEnv, RunEnvWarningsAreKept) {
  RunEnvAnswer a = parse_run_env_json(
      R"({"variables":[],"warnings":["mlx5_0 port 1 overrides the traffic class",7]})");
  EXPECT_EQ(a.error, "");
  EXPECT_THAT(a.warnings, ElementsAre("mlx5_0 port 1 overrides the traffic class"));
}

TEST(JobEnv, NothingToDecideIsNoError) {
  RunEnvAnswer a = parse_run_env_json(R"({"variables":[],"because":"no host policy"})");
  EXPECT_EQ(a.error, "");
  EXPECT_THAT(a.values, IsEmpty());
  EXPECT_EQ(a.because, "no host policy");
}

struct FakeEnv {
  std::map<std::string, std::string, std::less<>> vars;
  JobEnvLookup lookup() const {
    return [this](std::string_view n) -> std::optional<std::string> {
      auto it = vars.find(n);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }
};

std::vector<std::string> changes(const std::vector<EnvChange>& v) {
  std::vector<std::string> out;
  for (const auto& c : v)
    out.push_back(c.kept_user ? c.name + " kept " + c.user_value : c.name + "=" + c.value);
  return out;
}

const std::vector<StackValue> kValues = {{"UCX_IB_SL", "3", ""}, {"NCCL_IB_SL", "3", ""}};

TEST(JobEnv, ClassAndStackValuesAreSetAndRecorded) {
  FakeEnv env;
  auto plan = plan_job_env(3, true, kValues, parse_site_rules({}).rules, env.lookup());
  EXPECT_THAT(changes(plan),
              ElementsAre("RDMA_QOS_CLASS=3", "UCX_IB_SL=3", "NCCL_IB_SL=3",
                          "RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3,UCX_IB_SL=3,NCCL_IB_SL=3"));
}

TEST(JobEnv, TheUsersOwnValuesStayUnlessTheSiteOverwrites) {
  FakeEnv env{{{"UCX_IB_SL", "7"}}};
  EXPECT_THAT(changes(plan_job_env(3, true, kValues, parse_site_rules({}).rules, env.lookup())),
              ElementsAre("RDMA_QOS_CLASS=3", "UCX_IB_SL kept 7", "NCCL_IB_SL=3",
                          "RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3,NCCL_IB_SL=3"));
  EXPECT_THAT(changes(plan_job_env(3, true, kValues, parse_site_rules({"overwrite=yes"}).rules,
                                   env.lookup())),
              ElementsAre("RDMA_QOS_CLASS=3", "UCX_IB_SL=3", "NCCL_IB_SL=3",
                          "RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3,UCX_IB_SL=3,NCCL_IB_SL=3"));
}

TEST(JobEnv, TheOptionWinsOverTheUsersClassVariableButADefaultDoesNot) {
  FakeEnv env{{{"RDMA_QOS_CLASS", "9"}}};
  SiteRules r = parse_site_rules({}).rules;
  EXPECT_EQ(changes(plan_job_env(3, true, {}, r, env.lookup()))[0], "RDMA_QOS_CLASS=3");
  EXPECT_EQ(changes(plan_job_env(3, false, {}, r, env.lookup()))[0], "RDMA_QOS_CLASS kept 9");
}

TEST(JobEnv, ValuesAnEarlierStepSetAreNotTheUsers) {
  // A batch script's step set class 3; an srun inside it asks for class 0.
  FakeEnv env{{{"RDMA_QOS_CLASS", "3"},
               {"UCX_IB_SL", "3"},
               {"NCCL_IB_SL", "6"},  // changed by the user after the batch step
               {"RDMA_QOS_SLURM_SET", "RDMA_QOS_CLASS=3,UCX_IB_SL=3,NCCL_IB_SL=3"}}};
  std::vector<StackValue> zero = {{"UCX_IB_SL", "0", ""}, {"NCCL_IB_SL", "0", ""}};
  EXPECT_THAT(changes(plan_job_env(0, true, zero, parse_site_rules({}).rules, env.lookup())),
              ElementsAre("RDMA_QOS_CLASS=0", "UCX_IB_SL=0", "NCCL_IB_SL kept 6",
                          "RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=0,UCX_IB_SL=0"));
}

TEST(JobEnv, ThePreloadModuleGoesInFrontOnce) {
  SiteRules r = parse_site_rules({"preload=/m.so"}).rules;
  FakeEnv none;
  EXPECT_EQ(changes(plan_job_env(3, true, {}, r, none.lookup()))[1], "LD_PRELOAD=/m.so");
  FakeEnv other{{{"LD_PRELOAD", "/x.so"}}};
  EXPECT_EQ(changes(plan_job_env(3, true, {}, r, other.lookup()))[1], "LD_PRELOAD=/m.so:/x.so");
  FakeEnv already{{{"LD_PRELOAD", "/m.so:/x.so"}}};
  EXPECT_THAT(changes(plan_job_env(3, true, {}, r, already.lookup())),
              ElementsAre("RDMA_QOS_CLASS=3", "RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3"));
}

TEST(JobEnv, TheMarkerReadsNameValuePairs) {
  auto m = parse_marker("A=1,B=,=x,C");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m["A"], "1");
  EXPECT_EQ(m["B"], "");
}

// A stand-in for `rdma-qos`: prints its arguments and environment as run-env JSON.
// ctest runs each test in a process of its own, two at a time: the path carries the process id,
// or two tests' stand-ins would overwrite each other.
std::string fake_rdma_qos(const std::string& body) {
  static int n = 0;
  const std::string path = ::testing::TempDir() + "fake-rdma-qos-" + std::to_string(::getpid()) +
                           "-" + std::to_string(++n);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
  return path;
}

TEST(JobEnv, RunEnvRunsWithTheSiteArgumentsAndACleanEnvironment) {
  setenv("RDMA_QOS_POLICY", "/user/chosen", 1);
  SiteRules r = parse_site_rules({"link=roce", "policy=/site/p.conf", "config=/site/c.conf"}).rules;
  r.rdma_qos = fake_rdma_qos(
      "printf '{\"variables\":[{\"name\":\"ARGS\",\"action\":\"set\",\"value\":1,\"why\":\"%s\"},"
      "{\"name\":\"ENV\",\"action\":\"set\",\"value\":2,\"why\":\"%s\"}]}' \"$*\" "
      "\"$(env | grep RDMA_QOS | sort | tr '\\n' ' ')\"\n");
  RunEnvAnswer a = run_run_env(r, 7);
  unsetenv("RDMA_QOS_POLICY");
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_EQ(a.values[0].why,
            "run-env --json --override --class 7 --link roce --policy /site/p.conf");
  EXPECT_EQ(a.values[1].why, "RDMA_QOS_CONFIG=/site/c.conf ");
}

TEST(JobEnv, RunEnvThatHangsIsKilledAtTheTimeout) {
  SiteRules r = parse_site_rules({"timeout=1"}).rules;
  r.rdma_qos = fake_rdma_qos("exec sleep 30\n");
  const auto start = std::chrono::steady_clock::now();
  RunEnvAnswer a = run_run_env(r, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_THAT(a.error, HasSubstr("no answer within 1 s"));
}

TEST(JobEnv, RunEnvFailuresAreErrors) {
  SiteRules r = parse_site_rules({}).rules;
  r.rdma_qos = fake_rdma_qos("echo '{\"error\":\"no active RDMA port\"}'; exit 1\n");
  EXPECT_EQ(run_run_env(r, 1).error, "no active RDMA port");
  r.rdma_qos = fake_rdma_qos("echo '{\"variables\":[]}'; exit 3\n");
  EXPECT_THAT(run_run_env(r, 1).error, HasSubstr("exited with status 3"));
  r.rdma_qos = "/nonexistent/rdma-qos";
  EXPECT_THAT(run_run_env(r, 1).error, HasSubstr("cannot run /nonexistent/rdma-qos"));
}

}  // namespace
}  // namespace rdmaqos::slurm
