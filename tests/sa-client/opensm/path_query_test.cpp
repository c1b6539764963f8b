// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Our SA client against the real OpenSM on ibsim, through `rdma-qos path --json` run at a
// fabric node (umad2sim is an LD_PRELOAD interposer, so the client must be its own process).
// Every answer is checked against the policy and against what saquery gets for the same query.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <set>
#include <thread>

#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::sa {
namespace {

using nlohmann::json;
using testbed::IbFabric;
using testbed::IbFabricOptions;
using testbed::PathAnswer;
using testbed::RunResult;

const std::string kPolicy = testbed::sample_policy({});

// node001 and node002 share partition 0x0001 with nobody else (switches stay in the default
// partition only), so a table query on it from node001 has exactly two answers. Two, not
// three: umad2sim delivers only the first 232 bytes of a MAD intact (saquery sees the same),
// so a third 64-byte record arrives with its bytes 40-63 garbled.
constexpr const char* kPartitions = R"(Default=0x7fff, ipoib : ALL=full;
Small=0x0001 : 0x0002c90300a00011=full, 0x0002c90300a00021=full;
)";

std::string gid_of(const testbed::TopoNode& node) {
  return format_gid(make_gid(0xfe80000000000000ULL, node.port_guid));
}

json parse_json(const RunResult& r) {
  auto j = json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  return j;
}

class SaClientOpenSm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { fabric_ = testbed::start_fat_tree(kPolicy, kPartitions); }
  static void TearDownTestSuite() { fabric_.reset(); }

  static std::string lid(const std::string& node) { return fabric_->lid_arg(node); }

  // `rdma-qos path ... --json` at node001.
  static RunResult ours(std::vector<std::string> args) {
    std::vector<std::string> argv = {RDMA_QOS_CLI, "path"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--json");
    return fabric_->run_at("node001", argv);
  }

  // The one path our client gets from node001 to node002 with `extra` in the query.
  static json our_path(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--slid", lid("node001"), "--dlid", lid("node002")};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = ours(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    json j = parse_json(r);
    if (!j.contains("paths") || j["paths"].size() != 1) {
      ADD_FAILURE() << "expected one path: " << r.output;
      return json::object();
    }
    return j["paths"][0];
  }

  static PathAnswer saquery_path(std::vector<std::string> extra) {
    std::vector<std::string> argv = {"saquery",      "-p",     "--slid",
                                     lid("node001"), "--dlid", lid("node002")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = fabric_->run_at("node001", argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto records = testbed::parse_saquery_output(r.output);
    if (records.empty()) {
      ADD_FAILURE() << "saquery printed no record: " << r.output;
      return {};
    }
    return testbed::path_answer(records[0]).value_or(PathAnswer{});
  }

  static void expect_same_as_saquery(const json& p, const PathAnswer& s) {
    EXPECT_EQ(p.value("sl", -1), s.sl);
    EXPECT_EQ(p.value("mtu", -1), s.mtu);
    EXPECT_EQ(p.value("mtu_selector", -1), s.mtu_selector);
    EXPECT_EQ(p.value("rate", -1), s.rate);
    EXPECT_EQ(p.value("rate_selector", -1), s.rate_selector);
    EXPECT_EQ(p.value("packet_life", -1), s.packet_life);
    EXPECT_EQ(p.value("packet_life_selector", -1), s.packet_life_selector);
    EXPECT_EQ(p.value("qos_class", -1), s.qos_class);
    EXPECT_EQ(p.value("slid", -1), s.slid);
    EXPECT_EQ(p.value("dlid", -1), s.dlid);
  }

  static inline std::unique_ptr<IbFabric> fabric_;
};

TEST_F(SaClientOpenSm, IserServiceIdGetsItsLevel) {
  json p = our_path({"--service-id", "0x1060CBC"});
  EXPECT_EQ(p.value("sl", -1), 3);
  EXPECT_EQ(p.value("rate", -1), 5);  // 20 Gb/s path capped at 5 Gb/s
  EXPECT_EQ(p.value("packet_life", -1), 8);
  EXPECT_EQ(p.value("mtu", -1), 4);  // ibsim's 2048-byte MTU, not limited by the level
  expect_same_as_saquery(p, saquery_path({"--service_id", "0x1060CBC"}));
}

TEST_F(SaClientOpenSm, SdpServiceIdGetsTheUlpSl) {
  json p = our_path({"--service-id", "0x11234"});
  EXPECT_EQ(p.value("sl", -1), 1);
  EXPECT_EQ(p.value("rate", -1), 6);  // the path's own 20 Gb/s
  expect_same_as_saquery(p, saquery_path({"--service_id", "0x11234"}));
}

TEST_F(SaClientOpenSm, QosClassGetsItsLevel) {
  json p = our_path({"--qos-class", "7"});
  EXPECT_EQ(p.value("sl", -1), 5);
  EXPECT_EQ(p.value("mtu", -1), 3);  // mtu-limit 3: 1024 bytes
  EXPECT_EQ(p.value("packet_life", -1), 12);
  EXPECT_EQ(p.value("rate", -1), 6);
  expect_same_as_saquery(p, saquery_path({"--qos_class", "7"}));
}

TEST_F(SaClientOpenSm, NoServiceIdFallsToDefault) {
  json p = our_path({});
  EXPECT_EQ(p.value("sl", -1), 0);
  EXPECT_EQ(p.value("rate", -1), 6);
  expect_same_as_saquery(p, saquery_path({}));
}

TEST_F(SaClientOpenSm, SubnAdmGetAnswersOnePath) {
  json p = our_path({"--get", "--service-id", "0x1060CBC"});
  EXPECT_EQ(p.value("sl", -1), 3);
  EXPECT_EQ(p.value("dgid", ""), gid_of(fabric_->topology().node("node002")));
}

TEST_F(SaClientOpenSm, MultiPathRecordIsAnswered) {
  const auto& topo = fabric_->topology();
  RunResult r = ours({"--mpr", "--sgids", gid_of(topo.node("node001")), "--dgids",
                      gid_of(topo.node("node002")), "--service-id", "0x1060CBC"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = parse_json(r);
  ASSERT_GE(j["paths"].size(), 1u) << r.output;
  for (const auto& p : j["paths"]) {
    EXPECT_EQ(p.value("dlid", -1), fabric_->lid("node002"));
    EXPECT_EQ(p.value("sl", -1), 3);
    EXPECT_EQ(p.value("rate", -1), 5);
  }
}

// Numbers as common/number reads them: "010" is ten (leaf01's LID), not octal eight (node007).
TEST_F(SaClientOpenSm, LeadingZeroLidIsDecimal) {
  ASSERT_EQ(fabric_->lid("leaf01"), 10);
  RunResult r = ours({"--get", "--slid", fmt::format("0{}", lid("node001")), "--dlid", "010"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = parse_json(r);
  ASSERT_EQ(j["paths"].size(), 1u) << r.output;
  EXPECT_EQ(j["paths"][0].value("dlid", -1), 10) << r.output;
  EXPECT_EQ(j["paths"][0].value("slid", -1), fabric_->lid("node001")) << r.output;
}

TEST_F(SaClientOpenSm, GetTableReturnsEveryPathOfThePartition) {
  RunResult r = ours({"--slid", lid("node001"), "--pkey", "0x8001"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = parse_json(r);
  std::set<int> dlids;
  for (const auto& p : j["paths"]) dlids.insert(p.value("dlid", -1));
  EXPECT_EQ(dlids, (std::set<int>{fabric_->lid("node001"), fabric_->lid("node002")})) << r.output;
  for (const auto& p : j["paths"]) EXPECT_EQ(p.value("pkey", ""), "0x8001");
  RunResult s =
      fabric_->run_at("node001", {"saquery", "-p", "--slid", lid("node001"), "--pkey", "0x8001"});
  std::set<int> saquery_dlids;
  for (const auto& rec : testbed::parse_saquery_output(s.output))
    saquery_dlids.insert(static_cast<int>(rec.number("dlid").value_or(0)));
  EXPECT_EQ(dlids, saquery_dlids) << s.output;
}

TEST_F(SaClientOpenSm, ClassPortInfoShowsQosSupport) {
  RunResult r = ours({"cpi"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = parse_json(r);
  EXPECT_EQ(j.value("qos_supported", false), true) << r.output;
  RunResult s = fabric_->run_at("node001", {"saquery", "-c"});
  auto records = testbed::parse_saquery_output(s.output);
  ASSERT_FALSE(records.empty()) << s.output;
  auto mask2 = records[0].number("Capability mask 2");
  ASSERT_TRUE(mask2) << s.output;
  EXPECT_EQ(std::stoull(j.value("capability_mask2", "-"), nullptr, 16), *mask2);
}

TEST_F(SaClientOpenSm, NoSaAtTheLidTimesOut) {
  RunResult r = ours(
      {"--sa-lid", lid("node003"), "--timeout", "200", "--retries", "1", "--dlid", lid("node002")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  json j = parse_json(r);
  EXPECT_EQ(j["error"].value("code", ""), "timeout") << r.output;
}

// The sa_lid knob per port: `rdma-qos path` opens the first active port without being told
// which, and asks the LID the knob gives that port (node003's: no SA there, so it times out);
// an entry for another port leaves it asking its SM.
TEST_F(SaClientOpenSm, SaLidKnobPerPortAppliesToThePortOpened) {
  RunResult cas = fabric_->run_at("node001", {"ibstat", "-l"});
  ASSERT_EQ(cas.exit_code, 0) << cas.output;
  const std::string ca = cas.output.substr(0, cas.output.find('\n'));
  ASSERT_FALSE(ca.empty()) << cas.output;
  auto cpi_with = [&](const std::string& knob) {
    return fabric_->run_at("node001", {"env", "RDMA_QOS_SA_LID=" + knob, RDMA_QOS_CLI, "path",
                                       "cpi", "--timeout", "200", "--retries", "0", "--json"});
  };
  RunResult named = cpi_with("mlx9_9:1=1, " + ca + ":1=" + lid("node003"));
  EXPECT_EQ(named.exit_code, 1) << named.output;
  EXPECT_EQ(parse_json(named)["error"].value("code", ""), "timeout") << named.output;
  RunResult other = cpi_with("mlx9_9:1=" + lid("node003"));
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_EQ(parse_json(other).value("sa_lid", 0), 1) << other.output;
}

TEST_F(SaClientOpenSm, HalfAServiceIdMaskIsNeverSent) {
  // OpenSM answers INSUF_COMPS to one Service-ID bit alone; the client always sends both, so
  // this plain query succeeds rather than failing with that status.
  json p = our_path({"--service-id", "0x1"});
  EXPECT_EQ(p.value("sl", -1), 0);
}

TEST(SaClientOpenSmWithoutQos, ClassPortInfoQosBitIsClear) {
  IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.qos = false;
  IbFabric fabric(o);
  RunResult r = fabric.run_at("node002", {RDMA_QOS_CLI, "path", "cpi", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j.value("qos_supported", true), false) << r.output;
  EXPECT_EQ(j.value("multipath_supported", false), true) << r.output;
}

TEST(SaClientOpenSmStopped, QueryTimesOutWhenTheSmIsGone) {
  IbFabric fabric(testbed::fabric_options(testbed::make_fat_tree({})));
  auto pids = fabric.pids();  // ibsim, then OpenSM
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(pids[1], SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The port still names LID 1 as its SM, but nothing answers there any more.
  RunResult r = fabric.run_at("node001", {RDMA_QOS_CLI, "path", "--dlid", fabric.lid_arg("node002"),
                                          "--timeout", "200", "--retries", "2", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  json j = json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["error"].value("code", ""), "timeout") << r.output;
  EXPECT_NE(j["error"].value("message", "").find("3 attempt"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rdmaqos::sa
