// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's InfiniBand query against the real OpenSM on ibsim: the Service-ID and the
// QoS-Class it sends select the policy's levels, and the answer is what it would install.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "stand_in_calls.h"

namespace {

using nlohmann::json;
using rdmaqos::testbed::IbFabric;

class IbRouteOpenSm : public ::testing::Test {
 protected:
  // GOLD's rule comes first: a query with both the iSER Service-ID and QoS-Class 7 gets GOLD,
  // which shows that the QoS-Class was sent.
  static void SetUpTestSuite() {
    fabric_ = rdmaqos::testbed::start_fat_tree(
        rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true}));
  }
  static void TearDownTestSuite() {
    if (silent_sa_) {
      kill(silent_sa_->pid(), SIGCONT);  // so it can take its SIGTERM
      silent_sa_.reset();
    }
    fabric_.reset();
  }
  static json probe(const std::string& sid, const std::string& qos_class = "", bool mpr = false) {
    std::vector<std::string> argv = {RDMA_QOS_IB_ROUTE_PROBE};
    if (mpr) argv.push_back("--mpr");
    argv.insert(argv.end(), {std::to_string(fabric_->port_guid("node001")),
                             std::to_string(fabric_->port_guid("node002")), sid});
    if (!qos_class.empty()) argv.push_back(qos_class);
    auto r = fabric_->run_at("node001", argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto j = json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    return j;
  }
  // The unmodified-style client over the stand-in librdmacm, with the preload module and
  // umad2sim preloaded at node001; the stand-in's log, one JSON object per call.
  struct ClientRun {
    int exit_code = -1;
    std::string output;
    std::vector<json> calls;
    std::chrono::milliseconds took{0};
  };
  // `args`: the client's optional ROUTE_TIMEOUT_MS and CONNECTIONS.
  static ClientRun client(const std::string& mode, const std::vector<std::string>& env = {},
                          const std::vector<std::string>& args = {}) {
    // Per test: ctest runs the tests of this suite in parallel.
    std::string dir = ::testing::TempDir();
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string log = dir + "/fake-rdmacm-" + test + ".log";
    std::string config = dir + "/rdma-qos-empty-" + test + ".conf";
    std::remove(log.c_str());
    std::ofstream(config).flush();
    std::vector<std::string> argv = {
        "env",
        "LD_PRELOAD=" + rdmaqos::testbed::umad2sim_library() + ":" RDMA_QOS_PRELOAD_MODULE,
        "FAKE_RDMACM_SGUID=" + std::to_string(fabric_->port_guid("node001")),
        "FAKE_RDMACM_DGUID=" + std::to_string(fabric_->port_guid("node002")),
        "FAKE_RDMACM_LOG=" + log,
        "RDMA_QOS_CONFIG=" + config,
        "RDMA_QOS_SA=on"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {RDMA_QOS_IB_ROUTE_CLIENT, mode, "3260"});
    argv.insert(argv.end(), args.begin(), args.end());
    auto start = std::chrono::steady_clock::now();
    auto r = fabric_->run_at("node001", argv);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return ClientRun{r.exit_code, r.output, rdmaqos::testing::stand_in_calls(log), took};
  }
  static std::vector<json> calls_named(const ClientRun& r, const std::string& name) {
    return rdmaqos::testing::calls_named(r.calls, name);
  }
  static size_t occurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  // An SA that never answers, at node003's LID: rdma-qos-sad started there, and stopped
  // (SIGSTOP) once it answered, so queries are delivered to an SA and really time out.
  // (ibsim answers a GMP for a port where no SA agent listens at once with a timeout status:
  // a plain CA LID, or an unknown one, would fail immediately.)
  static std::string silent_sa_lid() {
    const std::string lid = fabric_->lid_arg("node003");
    if (silent_sa_) return lid;
    const std::string dir = fabric_->dir();
    std::ofstream(dir + "/silent-sa-policy.conf")
        << rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true});
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD, "--policy",     dir + "/silent-sa-policy.conf", "--control-socket",
              "",           "--foreground", "--rediscover-interval",        "0"};
    p.env = fabric_->client_env("node003");
    p.cwd = dir;
    p.output_path = dir + "/silent-sa.log";
    // rdma-qos-sad answers once it has discovered the fabric: seconds on a loaded machine.
    auto started =
        fabric_->start_until_answering(p, {RDMA_QOS_CLI, "path", "cpi", "--sa-lid", lid});
    silent_sa_ = std::move(started.daemon);
    const rdmaqos::testbed::RunResult& probe = started.probe;
    if (probe.exit_code != 0) {
      std::ifstream in(dir + "/silent-sa.log");
      std::string log(std::istreambuf_iterator<char>(in), {});
      ADD_FAILURE() << "rdma-qos-sad did not answer at LID " << lid << ": " << probe.output
                    << "\nits log:\n"
                    << log;
    }
    kill(silent_sa_->pid(), SIGSTOP);
    return lid;
  }
  static inline std::unique_ptr<rdmaqos::testbed::Process> silent_sa_;
  static inline std::unique_ptr<IbFabric> fabric_;
};

TEST_F(IbRouteOpenSm, ServiceIdSelectsItsLevel) {
  json j = probe("0x1060CBC");
  EXPECT_EQ(j.value("count", -1), 1);
  EXPECT_EQ(j.value("sl", -1), 3);
  EXPECT_EQ(j.value("flags", 0u), 0x2Bu);
}

TEST_F(IbRouteOpenSm, QosClassIsSentWhenTheSaAdvertisesQos) {
  json j = probe("0x1060CBC", "7");
  EXPECT_EQ(j.value("qos_supported", -1), 1);
  EXPECT_EQ(j.value("comp_mask", 0ULL) & 0x4000ULL, 0x4000ULL);
  // The answer carries QoS-Class 0 (OpenSM does not echo it): GOLD's SL shows it was matched.
  EXPECT_EQ(j.value("sl", -1), 5);   // the qos-class rule comes first
  EXPECT_EQ(j.value("mtu", -1), 3);  // GOLD's mtu-limit: 1024
}

TEST_F(IbRouteOpenSm, UnmatchedServiceIdGetsTheDefaultLevel) {
  json j = probe("0x1061D2F");
  EXPECT_EQ(j.value("count", -1), 1);
  EXPECT_EQ(j.value("sl", -1), 0);
}

// RDMA_QOS_MPR=1: OpenSM advertises MultiPathRecord (CapabilityMask bit 10), so the query is a
// MultiPathRecord; its answer selects the same levels as the PathRecord's.
TEST_F(IbRouteOpenSm, MultiPathRecordSelectsTheSameLevels) {
  json iser = probe("0x1060CBC", "", true);
  EXPECT_EQ(iser.value("multipath", false), true) << iser.dump();
  EXPECT_EQ(iser.value("count", -1), 1);
  EXPECT_EQ(iser.value("sl", -1), 3);
  EXPECT_EQ(iser.value("flags", 0u), 0x2Bu);
  json gold = probe("0x1060CBC", "7", true);
  EXPECT_EQ(gold.value("multipath", false), true) << gold.dump();
  EXPECT_EQ(gold.value("comp_mask", 0ULL) & 0x4000ULL, 0x4000ULL);
  EXPECT_EQ(gold.value("sl", -1), 5);
  EXPECT_EQ(gold.value("mtu", -1), 3);
}

// The whole wrapper: rdma_resolve_route -> PathRecord query to OpenSM -> rdma_set_option(
// RDMA_OPTION_IB, RDMA_OPTION_IB_PATH) with exactly GMP|PRIMARY|BIDIRECTIONAL and the answer
// of the Service-ID's level (iSER, SL 3) -> the program sees ROUTE_RESOLVED; the kernel's own
// route resolution never runs.
TEST_F(IbRouteOpenSm, AsyncIdGetsTheSaPathThroughRdmaSetOption) {
  auto r = client("async");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("async route resolved"), std::string::npos) << r.output;
  auto set = calls_named(r, "rdma_set_option");
  ASSERT_EQ(set.size(), 1u) << r.output;
  EXPECT_EQ(set[0].value("option", ""), "ib_path");
  EXPECT_EQ(set[0].value("flags", 0u), 0x2Bu);
  // OpenSM does not echo the Service-ID in its answer; iSER's SL 3 shows it was matched.
  EXPECT_EQ(set[0].value("sl", -1), 3);
  EXPECT_TRUE(calls_named(r, "rdma_resolve_route").empty());
  auto events = calls_named(r, "rdma_get_cm_event");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].value("event", ""), "ROUTE_RESOLVED");
  EXPECT_EQ(events[1].value("sync_channel", -1), 0);
}

// A synchronous id: the ROUTE_RESOLVED the kernel queues on its private channel is consumed by
// the module, so nothing is left for the next call on the id.
TEST_F(IbRouteOpenSm, SynchronousIdHasItsRouteResolvedEventConsumed) {
  auto r = client("sync");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_set_option").size(), 1u) << r.output;
  auto events = calls_named(r, "rdma_get_cm_event");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("event", ""), "ROUTE_RESOLVED");
  EXPECT_EQ(events[0].value("sync_channel", -1), 1);
  auto destroy = calls_named(r, "rdma_destroy_id");
  ASSERT_EQ(destroy.size(), 1u);
  EXPECT_EQ(destroy[0].value("pending_events", -1), 0);
}

TEST_F(IbRouteOpenSm, QosClassFromTheEnvironmentSelectsItsLevel) {
  auto r = client("async", {"RDMA_QOS_CLASS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto set = calls_named(r, "rdma_set_option");
  ASSERT_EQ(set.size(), 1u) << r.output;
  EXPECT_EQ(set[0].value("sl", -1), 5);   // GOLD
  EXPECT_EQ(set[0].value("mtu", -1), 3);  // GOLD's mtu-limit
}

TEST_F(IbRouteOpenSm, MultiPathRecordThroughTheModuleInstallsTheSameLevel) {
  auto r = client("sync", {"RDMA_QOS_MPR=1", "RDMA_QOS_CLASS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto set = calls_named(r, "rdma_set_option");
  ASSERT_EQ(set.size(), 1u) << r.output;
  EXPECT_EQ(set[0].value("flags", 0u), 0x2Bu);
  EXPECT_EQ(set[0].value("sl", -1), 5);
  // With sa on, a MultiPathRecord that could not be used would be logged.
  EXPECT_EQ(r.output.find("MultiPathRecord"), std::string::npos) << r.output;
}

TEST_F(IbRouteOpenSm, SaOffLeavesRouteResolutionToTheKernel) {
  auto r = client("async", {"RDMA_QOS_SA=off"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_set_option").empty());
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u);
}

// rdma_qos_query answers on InfiniBand too: the SA's SL, MTU and rate for the connection
// (iSER: SL 3, rate-limit 5; ibsim's MTU 2048, code 4), and the test hook records it.
TEST_F(IbRouteOpenSm, QueryReportsTheSaAnswerOnInfiniBand) {
  std::string record = ::testing::TempDir() + "/ib-query.record";
  std::remove(record.c_str());
  auto r = client("async", {"RDMA_QOS_TEST_RECORD=" + record});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("decision: sl 3 mtu 4 rate 5 service_id 0x1060cbc"), std::string::npos)
      << r.output;
  std::ifstream in(record);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << "no test hook record";
  auto j = json::parse(line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_EQ(j.value("call", ""), "rdma_resolve_route");
  EXPECT_EQ(j.value("service_id", 0ULL), 0x1060CBCULL);
  EXPECT_EQ(j.value("sl", -1), 3);
  EXPECT_EQ(j.value("mtu_limit", -1), 4);
  EXPECT_EQ(j.value("rate_limit", -1), 5);
}

// The kernel refuses the SA's path: the kernel's own route resolution follows, and the id keeps
// no decision (its QP must not get the refused path's SL, nor its tag name that level).
TEST_F(IbRouteOpenSm, PathTheKernelRefusesLeavesNoDecision) {
  for (const char* mode : {"async", "sync"}) {
    auto r = client(mode, {"FAKE_RDMACM_REFUSE_PATH=1"});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.output;
    EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u) << mode;
    EXPECT_EQ(r.output.find("decision: sl"), std::string::npos) << mode << ": " << r.output;
  }
}

// rdma_migrate_id changes whether an id is synchronous: moved to a channel, the program reads
// ROUTE_RESOLVED itself (the module must not take it); moved to none, the module consumes it as
// librdmacm would (nothing is left on the id's own channel).
TEST_F(IbRouteOpenSm, MigratedIdIsTreatedAsItsNewChannelSays) {
  auto to_async = client("migrate-to-async");
  ASSERT_EQ(to_async.exit_code, 0) << to_async.output;
  EXPECT_NE(to_async.output.find("async route resolved"), std::string::npos) << to_async.output;
  EXPECT_NE(to_async.output.find("decision: sl 3"), std::string::npos) << to_async.output;
  auto to_sync = client("migrate-to-sync");
  ASSERT_EQ(to_sync.exit_code, 0) << to_sync.output;
  EXPECT_NE(to_sync.output.find("decision: sl 3"), std::string::npos) << to_sync.output;
  auto destroyed = calls_named(to_sync, "rdma_destroy_id");
  ASSERT_EQ(destroyed.size(), 1u);
  EXPECT_EQ(destroyed[0].value("pending_events", -1), 0) << to_sync.output;
}

TEST_F(IbRouteOpenSm, QueryOfASynchronousIdReportsTheSaAnswer) {
  auto r = client("sync", {"RDMA_QOS_CLASS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // GOLD: SL 5, mtu-limit 3 (1024); the link's rate (node001-node002: 4x DDR, code 6).
  EXPECT_NE(r.output.find("decision: sl 5 mtu 3 rate 6 "), std::string::npos) << r.output;
}

// An SA that never answers: the ClassPortInfo query times out (300 ms, no retry), the module
// falls back to the real rdma_resolve_route, and the program sees ROUTE_RESOLVED as usual.
// With the default `sa auto` the fallback is logged once.
TEST_F(IbRouteOpenSm, SilentSaFallsBackToTheKernelForAnAsyncId) {
  auto r = client("async", {"RDMA_QOS_SA=auto", "RDMA_QOS_SA_LID=" + silent_sa_lid(),
                            "RDMA_QOS_SA_TIMEOUT_MS=300", "RDMA_QOS_SA_RETRIES=0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("async route resolved"), std::string::npos) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_set_option").empty()) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u);
  auto events = calls_named(r, "rdma_get_cm_event");
  ASSERT_EQ(events.size(), 2u) << r.output;
  EXPECT_EQ(events[1].value("event", ""), "ROUTE_RESOLVED");
  EXPECT_GE(r.took, std::chrono::milliseconds(300)) << "the query was not left to time out";
  EXPECT_EQ(occurrences(r.output, "the kernel's route resolution is used"), 1u) << r.output;
  EXPECT_NE(r.output.find("decision: errno 2"), std::string::npos) << r.output;  // ENOENT
}

TEST_F(IbRouteOpenSm, SilentSaFallsBackToTheKernelForASynchronousId) {
  auto r = client("sync", {"RDMA_QOS_SA_LID=" + silent_sa_lid(), "RDMA_QOS_SA_TIMEOUT_MS=300",
                           "RDMA_QOS_SA_RETRIES=0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("sync route resolved"), std::string::npos) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_set_option").empty()) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u);
  // The real rdma_resolve_route of a synchronous id returns with the route resolved: nothing
  // queued for the program, nothing left behind.
  EXPECT_TRUE(calls_named(r, "rdma_get_cm_event").empty());
  auto destroy = calls_named(r, "rdma_destroy_id");
  ASSERT_EQ(destroy.size(), 1u);
  EXPECT_EQ(destroy[0].value("pending_events", -1), 0);
}

// 20 connections to a silent SA whose settings alone would wait 11 s each (1000 ms x 11
// attempts): the first waits no longer than the program's rdma_resolve_route timeout (300 ms),
// the failure is remembered, so the others fall back at once (20 x 300 ms would be 6 s). The
// fallback is logged once, not per connection.
TEST_F(IbRouteOpenSm, SilentSaCostsOneRouteTimeoutPerProcess) {
  auto r = client("async",
                  {"RDMA_QOS_SA=auto", "RDMA_QOS_SA_LID=" + silent_sa_lid(),
                   "RDMA_QOS_SA_TIMEOUT_MS=1000", "RDMA_QOS_SA_RETRIES=10"},
                  {"300", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "async route resolved"), 20u) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 20u);
  EXPECT_GE(r.took, std::chrono::milliseconds(300));
  EXPECT_LT(r.took, std::chrono::milliseconds(4000));
  EXPECT_EQ(occurrences(r.output, "the kernel's route resolution is used"), 1u) << r.output;
}

// The number after `key` in the client's output (its first occurrence), -1 when absent.
long number_after(const std::string& text, const std::string& key) {
  size_t at = text.find(key + " ");
  return at == std::string::npos ? -1 : std::stol(text.substr(at + key.size() + 1));
}

// An event-driven program's thread never waits for the SA: with the SA stopped (rdma-qos-sad
// that answered, then SIGSTOP), rdma_resolve_route of an async id returns within milliseconds,
// and ROUTE_RESOLVED arrives later, from the kernel's own resolution once the query timed out
// in the background (the program's 1000 ms route timeout).
TEST_F(IbRouteOpenSm, StoppedSaCallReturnsAtOnceAndTheEventArrivesLater) {
  auto r = client("async",
                  {"RDMA_QOS_SA_LID=" + silent_sa_lid(), "RDMA_QOS_SA_TIMEOUT_MS=2000",
                   "RDMA_QOS_SA_RETRIES=3"},
                  {"1000"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  long returned = number_after(r.output, "returned_ms");
  long event = number_after(r.output, "event_ms");
  RecordProperty("returned_ms", std::to_string(returned));
  RecordProperty("event_ms", std::to_string(event));
  ASSERT_GE(returned, 0) << r.output;
  EXPECT_LT(returned, 50) << r.output;
  EXPECT_GE(event, 900) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_set_option").empty()) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 1u);
}

// With a live SA the call returns as soon, and the event follows the SA's answer, installed
// through rdma_set_option.
TEST_F(IbRouteOpenSm, AsyncIdsCallReturnsAtOnceAndTheSaPathFollows) {
  auto r = client("async");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  long returned = number_after(r.output, "returned_ms");
  RecordProperty("returned_ms", std::to_string(returned));
  RecordProperty("event_ms", std::to_string(number_after(r.output, "event_ms")));
  ASSERT_GE(returned, 0) << r.output;
  EXPECT_LT(returned, 50) << r.output;
  ASSERT_EQ(calls_named(r, "rdma_set_option").size(), 1u) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_resolve_route").empty());
}

// An id destroyed while its query is pending: the worker drops the answer and never touches
// the id (neither rdma_set_option nor the real rdma_resolve_route runs on it), and the program
// lives on past the query's end.
TEST_F(IbRouteOpenSm, IdDestroyedWhileItsQueryIsPendingIsLeftAlone) {
  auto r = client("async-destroy",
                  {"RDMA_QOS_SA_LID=" + silent_sa_lid(), "RDMA_QOS_SA_TIMEOUT_MS=2000",
                   "RDMA_QOS_SA_RETRIES=0"},
                  {"500"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("destroyed while pending"), std::string::npos) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_set_option").empty()) << r.output;
  EXPECT_TRUE(calls_named(r, "rdma_resolve_route").empty()) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_destroy_id").size(), 1u);
}

// The back-off: after one query to a silent SA timed out, the next connections of the process
// (sa_backoff 5 s) fall back at once: 5 connections one after another, each with a 400 ms
// budget, take one timeout, not five.
TEST_F(IbRouteOpenSm, SilentSaIsRememberedForTheBackOff) {
  auto r = client("async",
                  {"RDMA_QOS_SA_LID=" + silent_sa_lid(), "RDMA_QOS_SA_TIMEOUT_MS=2000",
                   "RDMA_QOS_SA_RETRIES=0", "RDMA_QOS_SA_BACKOFF=5"},
                  {"400", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "async route resolved"), 5u) << r.output;
  EXPECT_EQ(calls_named(r, "rdma_resolve_route").size(), 5u);
  EXPECT_GE(r.took, std::chrono::milliseconds(400));
  EXPECT_LT(r.took, std::chrono::milliseconds(1600)) << r.output;
}

// With no back-off the SA is asked again for every connection: each waits out its budget.
TEST_F(IbRouteOpenSm, NoBackOffAsksTheSilentSaEveryTime) {
  auto r = client("async",
                  {"RDMA_QOS_SA_LID=" + silent_sa_lid(), "RDMA_QOS_SA_TIMEOUT_MS=2000",
                   "RDMA_QOS_SA_RETRIES=0", "RDMA_QOS_SA_BACKOFF=0"},
                  {"400", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "async route resolved"), 3u) << r.output;
  EXPECT_GE(r.took, std::chrono::milliseconds(1200)) << r.output;
}

// RDMA_QOS_LOG: error hides the fallback warning; debug adds a line per connection.
TEST_F(IbRouteOpenSm, LogLevelErrorHidesTheFallbackWarning) {
  auto r = client("async", {"RDMA_QOS_LOG=error", "RDMA_QOS_SA_LID=" + silent_sa_lid(),
                            "RDMA_QOS_SA_TIMEOUT_MS=100", "RDMA_QOS_SA_RETRIES=0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("rdma-qos["), std::string::npos) << r.output;
}

TEST_F(IbRouteOpenSm, LogLevelDebugTellsEachConnectionsAnswer) {
  auto r = client("async", {"RDMA_QOS_LOG=debug"}, {"2000", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output,
                        "InfiniBand: Service-ID 0x1060cbc QoS-Class none: the SA "
                        "answered SL 3"),
            2u)
      << r.output;
}

// The deprecated RDMA_QOS_LOG_LEVEL still works, and says it is deprecated.
TEST_F(IbRouteOpenSm, DeprecatedLogLevelVariableStillWorks) {
  auto r = client("async", {"RDMA_QOS_LOG_LEVEL=debug"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the SA answered SL 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("RDMA_QOS_LOG_LEVEL is a deprecated name; use RDMA_QOS_LOG"),
            std::string::npos)
      << r.output;
}

}  // namespace

namespace {

// iSER (the client's port 3260) at `sl`, everything else at the default SL 0.
std::string iser_policy(int sl) {
  return "qos-levels\n"
         "  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\n"
         "  qos-level\n    name: ISER\n    sl: " +
         std::to_string(sl) +
         "\n  end-qos-level\n"
         "end-qos-levels\n"
         "qos-match-rules\n"
         "  qos-match-rule\n    service-id: 0x1060CBC\n    qos-level-name: ISER\n"
         "  end-qos-match-rule\n"
         "end-qos-match-rules\n";
}

struct Decision {
  int sl = -1;
  long at_ms = -1;
};

// The "decision: sl N ... at_ms T" lines of a long-running client's output.
std::vector<Decision> decisions(const std::string& output) {
  std::vector<Decision> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    Decision d;
    if (std::sscanf(line.c_str(), "decision: sl %d mtu %*u rate %*u service_id %*s at_ms %ld",
                    &d.sl, &d.at_ms) == 2)
      out.push_back(d);
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// A policy reload at rdma-qos-sad reaches a program that keeps connecting: its connections made
// more than cache_ttl (here 2 s) plus a margin after the reload get the new level's SL, the ones
// before it the old one.
TEST_F(IbRouteOpenSm, PolicyReloadReachesARunningProgramWithinTheCacheTtl) {
  const std::string dir = fabric_->dir();
  const std::string policy = dir + "/reload-policy.conf";
  std::ofstream(policy) << iser_policy(2);
  rdmaqos::testbed::ProcessOptions sad;
  const std::string lid = fabric_->lid_arg("node004");
  sad.argv = {RDMA_QOS_SAD,
              "--policy",
              policy,
              "--control-socket",
              "",
              "--foreground",
              "--rediscover-interval",
              "0"};
  sad.env = fabric_->client_env("node004");
  sad.cwd = dir;
  sad.output_path = dir + "/reload-sa.log";
  auto started =
      fabric_->start_until_answering(sad, {RDMA_QOS_CLI, "path", "cpi", "--sa-lid", lid});
  ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output << slurp(sad.output_path);

  const std::string config = dir + "/reload-client.conf";
  std::ofstream(config).flush();
  rdmaqos::testbed::ProcessOptions c;
  c.argv = {RDMA_QOS_IB_ROUTE_CLIENT, "async", "3260", "2000", "80", "100"};  // 8 s
  c.env = {{"LD_PRELOAD", rdmaqos::testbed::umad2sim_library() + ":" RDMA_QOS_PRELOAD_MODULE},
           {"IBSIM_SOCKNAME", fabric_->sockname()},
           {"SIM_HOST", "node001"},
           {"FAKE_RDMACM_SGUID", std::to_string(fabric_->port_guid("node001"))},
           {"FAKE_RDMACM_DGUID", std::to_string(fabric_->port_guid("node002"))},
           {"FAKE_RDMACM_LOG", dir + "/reload-rdmacm.log"},
           {"RDMA_QOS_CONFIG", config},
           {"RDMA_QOS_SA", "on"},
           {"RDMA_QOS_SA_LID", lid},
           {"RDMA_QOS_CACHE_TTL", "2"}};
  c.cwd = dir;
  c.output_path = dir + "/reload-client.out";
  auto client_process = rdmaqos::testbed::Process::spawn(c);
  // A few connections with the first policy, then the reload.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (decisions(slurp(c.output_path)).size() < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto before = decisions(slurp(c.output_path));
  ASSERT_GE(before.size(), 3u) << slurp(c.output_path);
  std::ofstream(policy) << iser_policy(6);
  kill(started.daemon->pid(), SIGHUP);
  const long reload_at_ms = before.back().at_ms + 100;  // the next connection is after it
  const auto status = client_process.wait_for(std::chrono::seconds(60));
  const std::string output = slurp(c.output_path);
  ASSERT_EQ(status, std::optional<int>(0)) << output;
  const auto all = decisions(output);
  ASSERT_EQ(all.size(), 80u) << output;
  constexpr long kBoundMs = 2000 + 1000;  // cache_ttl, and a second for the reload itself
  int new_sl = 0;
  for (const auto& d : all) {
    if (d.at_ms < reload_at_ms) {
      EXPECT_EQ(d.sl, 2) << "before the reload, at " << d.at_ms;
    }
    if (d.at_ms > reload_at_ms + kBoundMs) {
      EXPECT_EQ(d.sl, 6) << "after the bound, at " << d.at_ms;
    }
    if (d.sl == 6) ++new_sl;
  }
  EXPECT_GT(new_sl, 0) << output;
  started.daemon->stop();
}
