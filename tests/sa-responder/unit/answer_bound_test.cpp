// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Bounded work per answer (AnswerLimits): a table longer than max_records, or an answer still
// computed at its deadline, is ERR_NO_RESOURCES; everything within the bounds is answered byte
// for byte as without them. And estimate_work, by which rdma-qos-sad decides where to compute
// an answer, on the hand-built subnet of test_fabric.h.
#include <gtest/gtest.h>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-responder/answer.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kNoResources = 0x0100;
constexpr uint16_t kInsufComps = 0x0600;

struct BoundsSeen final : AnswerObserver {
  std::vector<Bound> bounds;
  size_t pairs = 0;
  void pair(const policy::Level*, Rejection) override { ++pairs; }
  void bounded(Bound b) override { bounds.push_back(b); }
};

class AnswerBound : public ::testing::Test {
 protected:
  FabricModel fabric = testing::small_model();
  std::vector<policy::Partition> partitions;
  BoundsSeen seen;

  AnswerContext ctx(AnswerLimits limits = {}) {
    AnswerContext c;
    c.fabric = &fabric;
    c.partitions = &partitions;
    c.observer = &seen;
    c.limits = limits;
    return c;
  }

  static sa::SaMad path(uint8_t method, sa::PathRecord q, uint64_t mask) {
    auto bytes = sa::encode_path_record(q);
    sa::SaMad m;
    m.mad.method = method;
    m.mad.attr_id = sa::attr::kPathRecord;
    m.mad.tid = 0x77;
    m.sa.comp_mask = mask;
    m.data.assign(bytes->begin(), bytes->end());
    return m;
  }
  // Every path of the subnet: a GetTable naming no end.
  static sa::SaMad open_table() { return path(sa::method::kGetTable, {}, 0); }
  static sa::SaMad get(uint16_t slid, uint16_t dlid) {
    return path(sa::method::kGet, {.dlid = dlid, .slid = slid}, pr::kSlid | pr::kDlid);
  }
  static sa::SaMad multipath(std::vector<uint64_t> src, std::vector<uint64_t> dst,
                             uint64_t mask = 0, uint8_t numb_path = 0) {
    sa::MultiPathRecord r;
    for (uint64_t g : src) r.sgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
    for (uint64_t g : dst) r.dgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
    r.numb_path = numb_path;
    auto bytes = sa::encode_multipath_record(r);
    sa::SaMad m;
    m.mad.method = sa::method::kGetMulti;
    m.mad.attr_id = sa::attr::kMultiPathRecord;
    m.mad.tid = 0x78;
    m.rmpp.flags = sa::rmpp::kFlagActive;
    m.sa.comp_mask = mask | sa::mpr_mask::kSgidCount | sa::mpr_mask::kDgidCount;
    m.data = *bytes;
    return m;
  }
  static size_t records(const sa::SaMad& resp) { return resp.data.size() / sa::kPathRecordSize; }
  static AnswerLimits at_most(size_t records) {
    AnswerLimits l;
    l.max_records = records;
    return l;
  }
  static AnswerLimits past_deadline() {
    return {.deadline = Clock::now() - std::chrono::seconds(1)};
  }
};

TEST_F(AnswerBound, TableWithinTheBoundIsAnsweredAsWithout) {
  auto unbounded = answer(ctx(), open_table());
  ASSERT_TRUE(unbounded);
  ASSERT_EQ(unbounded->mad.status, 0);
  const size_t n = records(*unbounded);
  ASSERT_GT(n, 4u);
  AnswerLimits both = at_most(n);
  both.deadline = Clock::now() + std::chrono::hours(1);
  auto bounded = answer(ctx(both), open_table());
  ASSERT_TRUE(bounded);
  EXPECT_EQ(sa::encode_sa_mad(*bounded), sa::encode_sa_mad(*unbounded));
  EXPECT_TRUE(seen.bounds.empty());
}

TEST_F(AnswerBound, TableOverTheBoundIsNoResourcesWithoutRecords) {
  const size_t n = records(*answer(ctx(), open_table()));
  seen = {};
  auto resp = answer(ctx(at_most(n - 1)), open_table());
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, kNoResources) << sa::mad_status_name(resp->mad.status);
  EXPECT_EQ(resp->mad.method, sa::method::kGetTableResp);
  EXPECT_EQ(resp->mad.tid, 0x77u);
  EXPECT_EQ(resp->sa.attr_offset, 0);
  // As every error answer: the request's record sent back, no table.
  EXPECT_EQ(resp->data.size(), sa::kSaDataSize);
  EXPECT_EQ(seen.bounds, std::vector<Bound>{Bound::kRecords});
  // It stops at the first record past the bound: n pairs looked at, not every one.
  EXPECT_LE(seen.pairs, n);
}

TEST_F(AnswerBound, GetIsNeverCutByTheRecordBound) {
  auto resp = answer(ctx(at_most(1)), get(2, 4));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  EXPECT_EQ(records(*resp), 1u);
  // A one-record table within a bound of one is answered too.
  auto table = answer(ctx(at_most(1)),
                      path(sa::method::kGetTable, {.dlid = 4, .slid = 2}, pr::kSlid | pr::kDlid));
  ASSERT_TRUE(table);
  EXPECT_EQ(table->mad.status, 0);
  EXPECT_TRUE(seen.bounds.empty());
}

TEST_F(AnswerBound, PastTheDeadlinePathQueriesAreNoResources) {
  for (const sa::SaMad& q : {get(2, 4), open_table(), multipath({0x11}, {0x31})}) {
    seen = {};
    auto resp = answer(ctx(past_deadline()), q);
    ASSERT_TRUE(resp);
    EXPECT_EQ(resp->mad.status, kNoResources) << sa::mad_status_name(resp->mad.status);
    EXPECT_EQ(seen.bounds, std::vector<Bound>{Bound::kTime});
    EXPECT_EQ(seen.pairs, 0u);
  }
}

TEST_F(AnswerBound, PastTheDeadlineRequestsAnsweredWithoutAPathKeepTheirAnswers) {
  AnswerContext c = ctx(past_deadline());
  // A bad request keeps its own status; ClassPortInfo and multicast DGIDs need no pair.
  auto bad = answer(c, path(sa::method::kGet, {.service_id = 1}, pr::kServiceIdLsb));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->mad.status, kInsufComps);
  sa::SaMad cpi;
  cpi.mad.method = sa::method::kGet;
  cpi.mad.attr_id = sa::attr::kClassPortInfo;
  auto info = answer(c, cpi);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->mad.status, 0);
  EXPECT_TRUE(seen.bounds.empty());
}

TEST_F(AnswerBound, MultiPathOverTheBoundIsNoResources) {
  // a to c and b: two records; the alternate-path form of two by two ports too.
  auto two = answer(ctx(), multipath({0x11}, {0x31, 0x21}));
  ASSERT_TRUE(two);
  ASSERT_EQ(records(*two), 2u);
  auto same = answer(ctx(at_most(2)), multipath({0x11}, {0x31, 0x21}));
  ASSERT_TRUE(same);
  EXPECT_EQ(sa::encode_sa_mad(*same), sa::encode_sa_mad(*two));
  auto cut = answer(ctx(at_most(1)), multipath({0x11}, {0x31, 0x21}));
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->mad.status, kNoResources);
  EXPECT_EQ(cut->mad.method, sa::method::kGetMultiResp);
  EXPECT_EQ(cut->mad.attr_id, sa::attr::kPathRecord);

  auto apm = answer(ctx(at_most(1)), multipath({0x11, 0x31}, {0x31, 0x11}, 0, 2));
  ASSERT_TRUE(apm);
  EXPECT_EQ(apm->mad.status, kNoResources);
  EXPECT_EQ(seen.bounds, (std::vector<Bound>{Bound::kRecords, Bound::kRecords}));
}

TEST_F(AnswerBound, StatusResponseSendsTheRequestBackWithTheStatus) {
  sa::SaMad busy = status_response(open_table(), sa::status::kBusy);
  EXPECT_EQ(busy.mad.status, sa::status::kBusy);
  EXPECT_EQ(busy.mad.method, sa::method::kGetTableResp);
  EXPECT_EQ(busy.mad.tid, 0x77u);
  EXPECT_EQ(busy.data.size(), sa::kSaDataSize);
}

// estimate_work: the LID combinations an answer may look at, before any is.
class WorkEstimate : public AnswerBound {
 protected:
  void SetUp() override {
    // a (LID 4-5) and c (LID 6-7) with LMC 1; the switch (LID 1) and b (LID 3) one LID each.
    fabric.nodes[1].ports[1].lid = 4;
    fabric.nodes[1].ports[1].lmc = 1;
    fabric.nodes[3].ports[1].lid = 6;
    fabric.nodes[3].ports[1].lmc = 1;
    fabric.nodes[0].lft = {0xFF, 0, 0xFF, 2, 1, 1, 3, 3};
    fabric.index();
  }
  static constexpr size_t kAllLids = 1 + 2 + 1 + 2;
};

TEST_F(WorkEstimate, OpenEndsCountEveryLidOfTheFabric) {
  EXPECT_EQ(estimate_work(ctx(), open_table()), kAllLids * kAllLids);
  // A Get may look at as many (one that finds no path looks at them all).
  EXPECT_EQ(estimate_work(ctx(), path(sa::method::kGet, {}, 0)), kAllLids * kAllLids);
  // One end named by GID: its LID range against every LID.
  sa::PathRecord from_a{.sgid = sa::make_gid(0xFE80000000000000ULL, 0x11)};
  EXPECT_EQ(estimate_work(ctx(), path(sa::method::kGetTable, from_a, pr::kSgid)), 2 * kAllLids);
  // A DLID narrows its end to one LID.
  EXPECT_EQ(estimate_work(ctx(), path(sa::method::kGetTable, {.dlid = 7}, pr::kDlid)), kAllLids);
  EXPECT_EQ(estimate_work(ctx(), get(5, 7)), 1u);
}

TEST_F(WorkEstimate, MultiPathSumsItsPortPairs) {
  // a (2 LIDs) to c (2) and b (1).
  EXPECT_EQ(estimate_work(ctx(), multipath({0x11}, {0x31, 0x21})), 2u * 3u);
}

TEST_F(WorkEstimate, RequestsAnsweredWithoutAPathCostNothing) {
  sa::SaMad cpi;
  cpi.mad.method = sa::method::kGet;
  cpi.mad.attr_id = sa::attr::kClassPortInfo;
  EXPECT_EQ(estimate_work(ctx(), cpi), 0u);
  EXPECT_EQ(estimate_work(ctx(), path(sa::method::kGet, {.service_id = 1}, pr::kServiceIdLsb)), 0u);
  EXPECT_EQ(estimate_work(ctx(), get(5, 99)), 0u);  // an end that is no port
  sa::SaMad response = open_table();
  response.mad.method = sa::method::kGetTableResp;
  EXPECT_EQ(estimate_work(ctx(), response), 0u);
  AnswerContext unknown = ctx();
  unknown.set_requester_lid(99);
  EXPECT_EQ(estimate_work(unknown, open_table()), 0u);
  // A multicast DGID: the group's one record.
  sa::PathRecord mc{.dgid = sa::make_gid(0xFF12401BFFFF0000ULL, 0xFFFFFFFF)};
  EXPECT_EQ(estimate_work(ctx(), path(sa::method::kGetTable, mc, pr::kDgid)), 1u);
}

TEST_F(WorkEstimate, EstimateBoundsThePairsLookedAt) {
  for (const sa::SaMad& q : {open_table(), get(5, 7), multipath({0x11}, {0x31, 0x21})}) {
    seen = {};
    answer(ctx(), q);
    EXPECT_LE(seen.pairs, estimate_work(ctx(), q));
  }
}

}  // namespace
}  // namespace rdmaqos::sad
