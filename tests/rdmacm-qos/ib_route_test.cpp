// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA: what the query carries, and the decision an
// installed answer gives (the sequence that asks and installs: tests/preload).
#include "rdma-qos/rdmacm-qos/ib_route.h"

#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>

#include "ib_route_inputs.h"

namespace rdmaqos::rdmacm {
namespace {

using testing::ib_route_inputs;

TEST(IbRoute, QueryCarriesServiceIdGidsPkeyAndQosClass) {
  auto q = build_path_query(ib_route_inputs(), true);
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
  auto q = build_path_query(ib_route_inputs(), false);
  EXPECT_EQ(q.record.qos_class, 0);
  EXPECT_EQ(q.comp_mask, 0x380FULL);
}

TEST(IbRoute, Ipv6TrafficClassIsQueried) {
  auto in = ib_route_inputs();
  in.tclass = 0x68;
  auto q = build_path_query(in, false);
  EXPECT_EQ(q.record.tclass, 0x68);
  EXPECT_EQ(q.comp_mask & 0x400ULL, 0x400ULL);
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
