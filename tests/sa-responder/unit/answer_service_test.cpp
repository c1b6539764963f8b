// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The shell both SA front ends share: the one loader of the policy and partitions
// (load_answer_state), the state in force and its answering context (AnswerService), and who may
// change a front end's state through its control socket.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-responder/answer_service.h"
#include "rdma-qos/sa-responder/answer_state.h"
#include "rdma-qos/sa-responder/control.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using namespace std::chrono_literals;

constexpr const char* kPolicy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 3\nend-qos-level\nend-qos-levels\n";
// A match rule naming a level nobody defined: an error at line 5.
constexpr const char* kBadPolicy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 3\nend-qos-level\nend-qos-levels\n"
    "qos-match-rules\nqos-match-rule\nqos-level-name: NOPE\nend-qos-match-rule\n"
    "end-qos-match-rules\n";

StateFile text_file(const std::string& path, const std::string& text) {
  return {path, std::make_shared<const std::string>(text), {}};
}

std::shared_ptr<const FabricModel> small() {
  return std::make_shared<const FabricModel>(testing::small_model());
}

sa::SaMad get(uint16_t slid, uint16_t dlid) {
  sa::PathRecord r;
  r.slid = slid;
  r.dlid = dlid;
  auto bytes = sa::encode_path_record(r);
  sa::SaMad m;
  m.mad.method = sa::method::kGet;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = 7;
  m.sa.comp_mask = pr::kSlid | pr::kDlid;
  m.data.assign(bytes->begin(), bytes->end());
  return m;
}

TEST(AnswerState, WithNoFilesEveryPortIsInTheDefaultPartitionAndNoPolicyApplies) {
  StateLoad r = load_answer_state(small(), {});
  ASSERT_TRUE(r.state);
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_EQ(r.state->policy, nullptr);
  EXPECT_FALSE(r.state->policy_fabric->partitions.empty());
  ASSERT_NE(r.state->groups, nullptr);
  EXPECT_FALSE(r.state->groups->empty());  // the default partition's IPoIB broadcast group
}

TEST(AnswerState, AFileThatCannotBeReadIsTheOnlyDiagnosticAndNothingIsCompiled) {
  StateInputs in;
  in.partitions = StateFile{"/etc/opensm/partitions.conf", nullptr, "No such file or directory"};
  in.policy = text_file("/etc/rdma/qos-policy.conf", kBadPolicy);
  StateLoad r = load_answer_state(small(), in);
  EXPECT_FALSE(r.state);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0],
            "/etc/opensm/partitions.conf: cannot read the file: No such file or directory");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(r.errors[0]);
}

TEST(AnswerState, APolicyParsedBeforehandLoadsAsItsText) {
  StateInputs by_text;
  by_text.policy = text_file("p.conf", kBadPolicy);
  StateInputs by_parse = by_text;
  by_parse.parsed = std::make_shared<const policy::ParseResult>(policy::parse_policy(kBadPolicy));
  StateLoad a = load_answer_state(small(), by_text);
  StateLoad b = load_answer_state(small(), by_parse);
  EXPECT_FALSE(a.state);
  EXPECT_FALSE(b.state);
  EXPECT_EQ(a.diagnostics, b.diagnostics);
  EXPECT_EQ(a.errors, b.errors);
  ASSERT_FALSE(a.diagnostics.empty());
  EXPECT_EQ(a.diagnostics[0].rfind("p.conf:", 0), 0u) << a.diagnostics[0];
}

TEST(AnswerState, AGoodPolicyIsCompiledAgainstTheModel) {
  StateInputs in;
  in.policy = text_file("p.conf", kPolicy);
  StateLoad r = load_answer_state(small(), in);
  ASSERT_TRUE(r.state) << (r.diagnostics.empty() ? "" : r.diagnostics[0]);
  ASSERT_NE(r.state->policy, nullptr);
  EXPECT_EQ(r.diagnostics.size(), r.errors.size());
}

TEST(AnswerService, NothingIsInForceBeforeInstallAndAfterClear) {
  AnswerService service({});
  EXPECT_EQ(service.current(), nullptr);
  service.install(*load_answer_state(small(), {}).state);
  ASSERT_NE(service.current(), nullptr);
  EXPECT_NE(service.current()->levels, nullptr);
  service.clear();
  EXPECT_EQ(service.current(), nullptr);
}

TEST(AnswerService, TheModelsLiveGroupsReplaceThoseThePartitionsImply) {
  FabricModel model = testing::small_model();
  MulticastGroup live{};
  live.mlid = 0xC123;
  live.pkey = 0xFFFF;
  model.multicast_groups = std::vector<MulticastGroup>{live};
  AnswerService service({});
  service.install(
      *load_answer_state(std::make_shared<const FabricModel>(std::move(model)), {}).state);
  ASSERT_EQ(service.current()->groups->size(), 1u);
  EXPECT_EQ(service.current()->groups->front().mlid, 0xC123);
}

class AlwaysSlTwo : public RoutingSl {
 public:
  uint8_t path_sl(uint8_t, uint16_t, uint16_t) const override { return 2; }
};

TEST(AnswerService, TheContextCarriesTheOptionsAndTheRoutingOnlyWhereTheEngineAssignsSls) {
  AlwaysSlTwo routing;
  ServiceOptions o;
  o.sa_key = 0x55;
  o.max_records = 100;
  o.answer_time_limit = 2s;
  o.routing = &routing;
  AnswerService service(o);
  service.install(*load_answer_state(small(), {}).state);
  const auto now = AnswerService::Clock::now();
  AnswerContext ctx = service.context(*service.current(), 2, now);
  EXPECT_EQ(ctx.sa_key, 0x55u);
  EXPECT_EQ(ctx.limits.max_records, 100u);
  ASSERT_TRUE(ctx.limits.deadline);
  EXPECT_EQ(*ctx.limits.deadline, now + 2s);
  EXPECT_EQ(ctx.requester, testing::kA);
  EXPECT_EQ(ctx.routing, nullptr);  // the model's engine assigns no SLs
  EXPECT_FALSE(service.context(*service.current(), std::nullopt, std::nullopt).limits.deadline);

  FabricModel lash = testing::small_model();
  lash.routing.assigns_sl = true;
  service.install(
      *load_answer_state(std::make_shared<const FabricModel>(std::move(lash)), {}).state);
  EXPECT_EQ(service.context(*service.current(), 2, now).routing, &routing);
}

TEST(AnswerService, ComputeCountsTheAnswerAndAnUnknownRequester) {
  AnswerService service({});
  service.install(*load_answer_state(small(), {}).state);
  auto now = service.current();
  const sa::SaMad request = get(2, 4);
  const DecodedQuery decoded = decode_query(request);
  auto known = service.compute(request, decoded, 2, *now, AnswerService::Clock::now());
  ASSERT_TRUE(known.answer);
  EXPECT_EQ(known.answer->mad.status, 0);
  EXPECT_FALSE(known.requester_unknown);
  auto unknown = service.compute(request, decoded, 99, *now, AnswerService::Clock::now());
  EXPECT_FALSE(unknown.answer);
  EXPECT_TRUE(unknown.requester_unknown);
  const CounterSnapshot counts = service.counters().snapshot();
  EXPECT_EQ(counts.responses, 1u);
  EXPECT_EQ(counts.dropped_unknown_requester, 1u);
  EXPECT_EQ(counts.latency.count, 2u);
}

TEST(AnswerService, WithoutWorkersOrForAQueryNamingBothEndsTheAnswerIsComputedHere) {
  ServiceOptions o;
  o.answer_threads = 1;
  for (bool workers : {false, true}) {
    AnswerService service(o);
    if (workers) service.start_workers();
    service.install(*load_answer_state(small(), {}).state);
    auto now = service.current();
    const auto received = AnswerService::Clock::now();
    bool made = false, asked_context = false;
    const sa::SaMad request = get(2, 4);
    auto placed = service.place(
        request, decode_query(request), 2, *now,
        [&] {
          asked_context = true;
          return service.context(*now, 2, received);
        },
        received,
        [&made]() -> AnswerPool::Task {
          made = true;
          return [] {};
        });
    EXPECT_EQ(placed.placement, AnswerService::Placement::kHere) << workers;
    EXPECT_FALSE(made) << "the task is made only for a worker";
    EXPECT_FALSE(asked_context) << "a query naming both ends needs no estimate";
  }
}

TEST(DecodedQuery, ThePathRecordIsDecodedOnceAndAnswersAsTheBytes) {
  const sa::SaMad request = get(2, 4);
  const DecodedQuery decoded = decode_query(request);
  ASSERT_TRUE(decoded.path);
  EXPECT_EQ(decoded.path->slid, 2);
  EXPECT_EQ(decoded.path->dlid, 4);
  EXPECT_FALSE(decoded.multipath);
  AnswerService service({});
  service.install(*load_answer_state(small(), {}).state);
  const AnswerContext ctx = service.context(*service.current(), 2, std::nullopt);
  auto a = answer(ctx, request);
  auto b = answer(ctx, request, decoded);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->data, b->data);
  EXPECT_EQ(estimate_work(ctx, request), estimate_work(ctx, request, decoded));
}

TEST(DecodedQuery, AMultiPathRecordKeepsElevenGidsSourcesFirstAsOpenSmReadsThem) {
  sa::MultiPathRecord r;
  for (int i = 0; i < 8; ++i) r.sgids.push_back(sa::Gid{});
  for (int i = 0; i < 8; ++i) r.dgids.push_back(sa::Gid{});
  auto bytes = sa::encode_multipath_record(r);
  ASSERT_TRUE(bytes);
  sa::SaMad m;
  m.mad.method = sa::method::kGetMulti;
  m.mad.attr_id = sa::attr::kMultiPathRecord;
  m.data.assign(bytes->begin(), bytes->end());
  const DecodedQuery decoded = decode_query(m);
  ASSERT_TRUE(decoded.multipath);
  EXPECT_EQ(decoded.multipath->sgids.size(), 8u);
  EXPECT_EQ(decoded.multipath->dgids.size(), 3u);
  EXPECT_FALSE(decoded.path);
}

TEST(ControlAccess, OnlyStatsAndExplainAreReadOnly) {
  EXPECT_FALSE(changes_state(ControlAction::kStats));
  EXPECT_FALSE(changes_state(ControlAction::kExplain));
  for (auto a : {ControlAction::kReload, ControlAction::kRediscover, ControlAction::kPause,
                 ControlAction::kResume})
    EXPECT_TRUE(changes_state(a));
}

TEST(ControlAccess, TheProcesssOwnUserMayChangeItsState) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  EXPECT_FALSE(refusal_for_peer(fds[0], {ControlAction::kReload, false}, "reload"));
  EXPECT_FALSE(refusal_for_peer(fds[0], {ControlAction::kStats, false}, "stats"));
  close(fds[0]);
  close(fds[1]);
  // Credentials that cannot be read (no socket): only reading.
  EXPECT_FALSE(refusal_for_peer(-1, {ControlAction::kStats, false}, "stats"));
  auto refused = refusal_for_peer(-1, {ControlAction::kPause, false}, "pause");
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["ok"], false);
  EXPECT_EQ((*refused)["message"],
            "pause needs root: the control socket's group may only read the stats");
}

TEST(ControlAccess, AGroupIsANameOrANumber) {
  EXPECT_EQ(control_group_id("root"), gid_t{0});
  EXPECT_EQ(control_group_id("4321"), gid_t{4321});
  EXPECT_FALSE(control_group_id("no-such-group-rdma-qos"));
  EXPECT_FALSE(control_group_id(""));
}

}  // namespace
}  // namespace rdmaqos::sad
