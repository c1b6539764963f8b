// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading saquery's dumps (text captured from saquery 3.3.23 against OpenSM on ibsim).
#include <gtest/gtest.h>

#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::testbed {
namespace {

constexpr const char* kPathDump = R"(PathRecord dump:
		service_id..............0x0000000000000000
		dgid....................fe80::10:3
		sgid....................fe80::20:0
		dlid....................3
		slid....................1
		hop_flow_raw............0x0
		tclass..................0x0
		num_path_revers.........0x80
		pkey....................0xFFFF
		qos_class...............0x0
		sl......................0x3
		mtu.....................0x84
		rate....................0x85
		pkt_life................0x88
		preference..............0x0
		resv2...................0x000000000000
)";

TEST(SaqueryParse, PathRecordFields) {
  auto records = parse_saquery_output(kPathDump);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, "PathRecord");
  EXPECT_EQ(records[0].fields.at("dgid"), "fe80::10:3");
  EXPECT_EQ(records[0].number("pkey"), 0xFFFFu);
}

TEST(SaqueryParse, PathAnswerSplitsSelectors) {
  auto a = path_answer(parse_saquery_output(kPathDump).at(0));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->sl, 3);
  EXPECT_EQ(a->mtu, 4);
  EXPECT_EQ(a->mtu_selector, 2);
  EXPECT_EQ(a->rate, 5);
  EXPECT_EQ(a->rate_selector, 2);
  EXPECT_EQ(a->packet_life, 8);
  EXPECT_EQ(a->slid, 1);
  EXPECT_EQ(a->dlid, 3);
}

TEST(SaqueryParse, ClassPortInfoBlock) {
  auto records = parse_saquery_output(
      "SA ClassPortInfo:\n\t\tCapability mask..........0x2602\n"
      "\t\tCapability mask 2........0x0000B5EA\n\t\tResponse time value......0x10\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, "SA ClassPortInfo");
  EXPECT_EQ(records[0].number("Capability mask 2"), 0xB5EAu);
}

TEST(SaqueryParse, SeveralRecordsAndNoise) {
  auto records = parse_saquery_output(
      "ibwarn: something\nNodeRecord dump:\n\t\tlid.....................2\n"
      "NodeRecord dump:\n\t\tlid.....................3\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].number("lid"), 3u);
}

TEST(SaqueryParse, MissingFieldGivesNoPathAnswer) {
  auto records = parse_saquery_output("PathRecord dump:\n\t\tsl......................0x3\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(path_answer(records[0]));
  EXPECT_FALSE(records[0].number("rate"));
}

TEST(SaqueryParse, NonNumericValueIsNotANumber) {
  auto records = parse_saquery_output("NodeRecord dump:\n\t\tnode_type...............Switch\n");
  EXPECT_FALSE(records.at(0).number("node_type"));
}

TEST(RateCodes, AreComparedBySpeedNotCode) {
  EXPECT_EQ(rate_code_gbps(2), 2.5);
  EXPECT_EQ(rate_code_gbps(5), 5);
  EXPECT_GT(rate_code_gbps(3), rate_code_gbps(5));  // code 3 (10G) beats code 5 (5G)
  EXPECT_EQ(rate_code_gbps(99), 0);
  EXPECT_EQ(mtu_code_bytes(4), 2048);
  EXPECT_EQ(mtu_code_bytes(0), 0);
}

}  // namespace
}  // namespace rdmaqos::testbed
