// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA, against a fake SA and a fake librdmacm: what the
// query carries, the path installed (flags exactly GMP|PRIMARY|BIDIRECTIONAL, the record in the
// kernel's wire layout), the queued event of synchronous ids, and the fallback on every failure.
#include "rdma-qos/rdmacm-qos/ib_route.h"

#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>

#include <vector>

namespace rdmaqos::rdmacm {
namespace {

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

struct FakeCm {
  int qos_supported = 1;
  int answers = 1;  // records the SA answers; -1: query fails
  uint8_t answer_sl = 5;
  int set_path_rc = 0;
  int mpr_supported = 1;
  int mpr_answers = 1;  // -1: the MultiPathRecord query fails
  std::vector<sa::PathQuery> queries;
  std::vector<sa::PathQuery> mpr_queries;
  std::vector<ibv_path_data> installed;
  std::vector<size_t> installed_len;
  int events_consumed = 0;

  IbRouteOps ops() {
    IbRouteOps o;
    o.sa_qos_supported = [this] { return capability(qos_supported); };
    o.path_query = [this](const sa::PathQuery& q) {
      queries.push_back(q);
      return answer_to(q, answers, answer_sl);
    };
    o.sa_mpr_supported = [this] { return capability(mpr_supported); };
    o.multipath_query = [this](const sa::PathQuery& q) {
      mpr_queries.push_back(q);
      return answer_to(q, mpr_answers, 7);
    };
    o.set_path = [this](ibv_path_data* d, size_t len) {
      installed.push_back(*d);
      installed_len.push_back(len);
      return set_path_rc;
    };
    o.consume_route_resolved = [this] {
      ++events_consumed;
      return 0;
    };
    return o;
  }
};

IbRouteInputs inputs() {
  IbRouteInputs in;
  in.sgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300000001ULL);
  in.dgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300000002ULL);
  in.service_id = 0x0000000001060CBCULL;  // iSER 3260 in the TCP port space
  in.qos_class = 0x20;
  return in;
}

TEST(IbRoute, QueryCarriesServiceIdGidsPkeyAndQosClass) {
  auto q = build_path_query(inputs(), true);
  EXPECT_EQ(q.record.service_id, 0x0000000001060CBCULL);
  EXPECT_EQ(sa::gid_guid(q.record.dgid), 0x0002c90300000002ULL);
  EXPECT_EQ(sa::gid_guid(q.record.sgid), 0x0002c90300000001ULL);
  EXPECT_EQ(q.record.pkey, 0xFFFF);
  EXPECT_EQ(q.record.qos_class, 0x20);
  EXPECT_TRUE(q.record.reversible);
  EXPECT_EQ(q.record.numb_path, 1);
  // SERVICE_ID 0x3, DGID 0x4, SGID 0x8, REVERSIBLE 0x800, NUMB_PATH 0x1000, PKEY 0x2000,
  // QOS_CLASS 0x4000.
  EXPECT_EQ(q.comp_mask, 0x780FULL);
}

TEST(IbRoute, TheRouteGidsAreTheIdsInNetworkOrder) {
  ibv_gid gid{};
  gid.global.subnet_prefix = htobe64(0xfe80000000000000ULL);
  gid.global.interface_id = htobe64(0x0002c90300000001ULL);
  EXPECT_EQ(gid_of(gid), sa::make_gid(0xfe80000000000000ULL, 0x0002c90300000001ULL));
}

TEST(IbRoute, QosClassOnlyWhenTheSaAdvertisesQos) {
  auto q = build_path_query(inputs(), false);
  EXPECT_EQ(q.record.qos_class, 0);
  EXPECT_EQ(q.comp_mask, 0x380FULL);
}

TEST(IbRoute, Ipv6TrafficClassIsQueried) {
  auto in = inputs();
  in.tclass = 0x68;
  auto q = build_path_query(in, false);
  EXPECT_EQ(q.record.tclass, 0x68);
  EXPECT_EQ(q.comp_mask & 0x400ULL, 0x400ULL);
}

TEST(IbRoute, InstallsTheAnswerWithExactlyGmpPrimaryBidirectional) {
  FakeCm cm;
  auto r = resolve_ib_route(inputs(), false, cm.ops());
  ASSERT_TRUE(r.installed) << r.why;
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(cm.installed[0].flags, 0x2Bu);
  EXPECT_EQ(cm.installed_len[0], sizeof(ibv_path_data));
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 5);
  EXPECT_EQ(cm.installed[0].path.mtu, 0x80 | IBV_MTU_2048);  // selector "exactly"
  EXPECT_EQ(be64toh(cm.installed[0].path.service_id), 0x0000000001060CBCULL);
  EXPECT_EQ(cm.events_consumed, 0);  // an asynchronous id's program reads the event itself
}

TEST(IbRoute, SynchronousIdHasItsQueuedRouteResolvedConsumed) {
  FakeCm cm;
  auto r = resolve_ib_route(inputs(), true, cm.ops());
  ASSERT_TRUE(r.installed);
  EXPECT_EQ(cm.events_consumed, 1);
}

TEST(IbRoute, NoRecordFallsBackWithoutTouchingTheId) {
  FakeCm cm;
  cm.answers = 0;
  auto r = resolve_ib_route(inputs(), true, cm.ops());
  EXPECT_FALSE(r.installed);
  EXPECT_TRUE(cm.installed.empty());
  EXPECT_EQ(cm.events_consumed, 0);
  EXPECT_FALSE(r.why.empty());
}

TEST(IbRoute, SaTimeoutFallsBack) {
  FakeCm cm;
  cm.answers = -1;
  auto r = resolve_ib_route(inputs(), false, cm.ops());
  EXPECT_FALSE(r.installed);
  EXPECT_TRUE(cm.installed.empty());
}

TEST(IbRoute, UnreachableSaFallsBackBeforeAnyQuery) {
  FakeCm cm;
  cm.qos_supported = -1;
  auto r = resolve_ib_route(inputs(), false, cm.ops());
  EXPECT_FALSE(r.installed);
  EXPECT_TRUE(cm.queries.empty());
}

TEST(IbRoute, RefusedPathFallsBackAndConsumesNothing) {
  FakeCm cm;
  cm.set_path_rc = -1;
  auto r = resolve_ib_route(inputs(), true, cm.ops());
  EXPECT_FALSE(r.installed);
  EXPECT_EQ(cm.events_consumed, 0);
}

TEST(IbRoute, MultiPathRecordWhenAskedAndAdvertisedInstallsItsFirstAnswer) {
  FakeCm cm;
  auto r = resolve_ib_route(inputs(), false, cm.ops(), true);
  EXPECT_TRUE(r.installed);
  EXPECT_TRUE(r.multipath);
  EXPECT_TRUE(cm.queries.empty());
  ASSERT_EQ(cm.mpr_queries.size(), 1u);
  EXPECT_EQ(cm.mpr_queries[0].record.service_id, 0x0000000001060CBCULL);
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 7);
  EXPECT_EQ(cm.installed[0].flags, 0x2Bu);
}

TEST(IbRoute, MultiPathRecordNotAdvertisedUsesPathRecord) {
  FakeCm cm;
  cm.mpr_supported = 0;
  auto r = resolve_ib_route(inputs(), false, cm.ops(), true);
  EXPECT_TRUE(r.installed);
  EXPECT_FALSE(r.multipath);
  EXPECT_TRUE(cm.mpr_queries.empty());
  EXPECT_EQ(cm.queries.size(), 1u);
  EXPECT_NE(r.note.find("does not advertise"), std::string::npos) << r.note;
}

TEST(IbRoute, FailedMultiPathRecordFallsBackToPathRecord) {
  FakeCm cm;
  cm.mpr_answers = -1;
  auto r = resolve_ib_route(inputs(), false, cm.ops(), true);
  EXPECT_TRUE(r.installed);
  EXPECT_FALSE(r.multipath);
  EXPECT_EQ(cm.mpr_queries.size(), 1u);
  EXPECT_EQ(cm.queries.size(), 1u);
  ASSERT_EQ(cm.installed.size(), 1u);
  EXPECT_EQ(ntohs(cm.installed[0].path.qosclass_sl) & 0xF, 5);
}

TEST(IbRoute, WithoutMprPathRecordOnly) {
  FakeCm cm;
  auto r = resolve_ib_route(inputs(), false, cm.ops());
  EXPECT_TRUE(r.installed);
  EXPECT_TRUE(cm.mpr_queries.empty());
  EXPECT_TRUE(r.note.empty());
}

// rdma_qos_query on InfiniBand reports the SA's answer: SL 3, MTU 2048 (code 4) and 20 Gb/s
// (code 6) below their selector bits, with the Service-ID and QoS-Class the query carried.
TEST(IbRoute, DecisionFromTheSaAnswerCarriesItsSlMtuAndRate) {
  sa::PathRecord answer;
  answer.qos_class = 7;
  answer.sl = 3;
  answer.mtu_selector = sa::Selector::kExactly;
  answer.mtu = 4;  // 2048
  answer.rate_selector = sa::Selector::kExactly;
  answer.rate = 6;  // 20 Gb/s
  CmDecision d = decision_from_path(answer, 0x1060CBC, 7);
  EXPECT_EQ(d.service_id, 0x1060CBCu);
  EXPECT_EQ(d.qos_class, std::optional<uint16_t>(7));
  EXPECT_EQ(d.sl, 3);
  EXPECT_EQ(d.mtu_limit, std::optional<uint8_t>(4));
  EXPECT_EQ(d.rate_limit, std::optional<uint8_t>(6));
  EXPECT_FALSE(d.traffic_class);
  EXPECT_FALSE(d.rule);
  EXPECT_EQ(d.level, "");
}

// The answer's rate is the path's, lowered to the level's rate-limit only if the level has one:
// the host cannot tell which, so it is the address vector's static rate and paces nothing.
TEST(IbRoute, TheSasRateIsAStaticRateThatPacesNothing) {
  sa::PathRecord answer;
  answer.sl = 3;
  answer.rate = 6;  // 20 Gb/s
  providers::QosDecision q = to_qos_decision(decision_from_path(answer, 0x1060CBC, 7));
  EXPECT_EQ(q.static_rate, std::optional<uint8_t>(6));
  EXPECT_FALSE(q.pace);
}

}  // namespace
}  // namespace rdmaqos::rdmacm
