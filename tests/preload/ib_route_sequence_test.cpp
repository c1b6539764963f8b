// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand route sequence against a fake SA and a fake librdmacm (its host): the path
// installed (flags exactly GMP|PRIMARY|BIDIRECTIONAL, the record in the kernel's wire layout),
// the queued event of synchronous ids, MultiPathRecord when asked, and the fallback on every
// failure.
#include "ib_route_sequence.h"

#include <arpa/inet.h>
#include <endian.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "../rdmacm-qos/ib_route_inputs.h"
#include "rdma-qos/testbed/result_matchers.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::PathAnswer;
using rdmacm::testing::ib_route_inputs;
using rdmaqos::testing::FailedWith;
using rdmaqos::testing::Succeeded;
using ::testing::Not;

rdmaqos::Result<bool> capability(int advertised) {
  if (advertised < 0) return rdmaqos::make_error(rdmaqos::ErrorCode::kTimeout, "no answer");
  return advertised == 1;
}

// The SA's answer to `q`: the query echoed with `sl`, `count` times (-1: the query fails).
PathAnswer answer_to(const sa::PathQuery& q, int count, uint8_t sl) {
  if (count < 0) return rdmaqos::make_error(rdmaqos::ErrorCode::kTimeout, "no answer");
  sa::PathRecord p = q.record;
  p.sl = sl;
  p.mtu_selector = sa::Selector::kExactly;
  p.mtu = IBV_MTU_2048;
  return std::vector<sa::PathRecord>(static_cast<size_t>(count), p);
}

// A fake SA and librdmacm behind the sequence.
class FakeCm final : public IbRouteHost {
 public:
  int qos_supported = 1;
  int answers = 1;  // records the SA answers; -1: query fails
  uint8_t answer_sl = 5;
  int set_path_rc = 0;
  int mpr_supported = 1;
  int mpr_answers = 1;  // -1: the MultiPathRecord query fails
  std::vector<sa::PathQuery> queries;
  std::vector<sa::PathQuery> mpr_queries;
  std::vector<ibv_path_data> installed;
  std::vector<sa::PathRecord> installed_answers;
  int events_consumed = 0;

  rdmaqos::Result<bool> sa_qos_supported() override { return capability(qos_supported); }
  PathAnswer path_records(const sa::PathQuery& q) override {
    queries.push_back(q);
    return answer_to(q, answers, answer_sl);
  }
  rdmaqos::Result<bool> sa_mpr_supported() override { return capability(mpr_supported); }
  PathAnswer multipath_records(const sa::PathQuery& q) override {
    mpr_queries.push_back(q);
    return answer_to(q, mpr_answers, 7);
  }
  int set_path(ibv_path_data& d, const sa::PathRecord& answer) override {
    installed.push_back(d);
    installed_answers.push_back(answer);
    return set_path_rc;
  }
  int consume_route_resolved() override {
    ++events_consumed;
    return 0;
  }
};

TEST(IbRouteSequence, InstallsTheAnswerWithExactlyGmpPrimaryBidirectional) {
  FakeCm cm;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm);
  ASSERT_THAT(r.installed, Succeeded());
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(cm.installed[0].flags, 0x2Bu);
  ASSERT_EQ(cm.installed_answers.size(), 1u);
  EXPECT_EQ(cm.installed_answers[0].sl, 5);  // the record the path was encoded from
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 5);
  EXPECT_EQ(cm.installed[0].path.mtu, 0x80 | IBV_MTU_2048);  // selector "exactly"
  EXPECT_EQ(be64toh(cm.installed[0].path.service_id), 0x0000000001060CBCULL);
  EXPECT_EQ(cm.events_consumed, 0);  // an asynchronous id's program reads the event itself
}

TEST(IbRouteSequence, SynchronousIdHasItsQueuedRouteResolvedConsumed) {
  FakeCm cm;
  auto r = resolve_ib_route(ib_route_inputs(), true, cm);
  ASSERT_THAT(r.installed, Succeeded());
  EXPECT_EQ(cm.events_consumed, 1);
}

TEST(IbRouteSequence, NoRecordFallsBackWithoutTouchingTheId) {
  FakeCm cm;
  cm.answers = 0;
  auto r = resolve_ib_route(ib_route_inputs(), true, cm);
  EXPECT_THAT(r.installed, Not(Succeeded()));
  EXPECT_TRUE(cm.installed.empty());
  EXPECT_EQ(cm.events_consumed, 0);
  EXPECT_EQ(r.installed.error().message, "the SA has no path for this Service-ID and QoS-Class");
}

TEST(IbRouteSequence, SaTimeoutFallsBack) {
  FakeCm cm;
  cm.answers = -1;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm);
  EXPECT_THAT(r.installed, FailedWith(ErrorCode::kTimeout));
  EXPECT_TRUE(cm.installed.empty());
}

TEST(IbRouteSequence, UnreachableSaFallsBackBeforeAnyQuery) {
  FakeCm cm;
  cm.qos_supported = -1;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm);
  EXPECT_THAT(r.installed, FailedWith(ErrorCode::kTimeout));
  EXPECT_TRUE(cm.queries.empty());
}

TEST(IbRouteSequence, RefusedPathFallsBackAndConsumesNothing) {
  FakeCm cm;
  cm.set_path_rc = -1;
  auto r = resolve_ib_route(ib_route_inputs(), true, cm);
  EXPECT_THAT(r.installed, Not(Succeeded()));
  EXPECT_EQ(cm.events_consumed, 0);
}

TEST(IbRouteSequence, MultiPathRecordWhenAskedAndAdvertisedInstallsItsFirstAnswer) {
  FakeCm cm;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm, true);
  EXPECT_THAT(r.installed, Succeeded());
  EXPECT_TRUE(r.multipath);
  EXPECT_TRUE(cm.queries.empty());
  ASSERT_EQ(cm.mpr_queries.size(), 1u);
  EXPECT_EQ(cm.mpr_queries[0].record.service_id, 0x0000000001060CBCULL);
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 7);
  EXPECT_EQ(cm.installed[0].flags, 0x2Bu);
}

TEST(IbRouteSequence, MultiPathRecordNotAdvertisedUsesPathRecord) {
  FakeCm cm;
  cm.mpr_supported = 0;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm, true);
  EXPECT_THAT(r.installed, Succeeded());
  EXPECT_FALSE(r.multipath);
  EXPECT_TRUE(cm.mpr_queries.empty());
  EXPECT_EQ(cm.queries.size(), 1u);
  ASSERT_TRUE(r.multipath_unused);
  EXPECT_EQ(r.multipath_unused->message,
            "the SA does not advertise MultiPathRecord; PathRecord used");
}

TEST(IbRouteSequence, FailedMultiPathRecordFallsBackToPathRecord) {
  FakeCm cm;
  cm.mpr_answers = -1;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm, true);
  EXPECT_THAT(r.installed, Succeeded());
  EXPECT_FALSE(r.multipath);
  EXPECT_EQ(cm.mpr_queries.size(), 1u);
  EXPECT_EQ(cm.queries.size(), 1u);
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 5);
}

TEST(IbRouteSequence, WithoutMprPathRecordOnly) {
  FakeCm cm;
  auto r = resolve_ib_route(ib_route_inputs(), false, cm);
  EXPECT_THAT(r.installed, Succeeded());
  EXPECT_TRUE(cm.mpr_queries.empty());
  EXPECT_FALSE(r.multipath_unused);
}

}  // namespace
}  // namespace rdmaqos::preload
