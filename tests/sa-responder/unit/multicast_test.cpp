// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The multicast groups OpenSM 3.3.23 creates from a partitions configuration, and its
// PathRecord answer for a multicast DGID, as seen on ibsim (opensm 3.3.23, saquery -p --dgid):
// Default=0x7fff,ipoib gives ff12:401b:ffff::ffff:ffff at MLID 0xC000 with MTU 0x84, rate
// 0x83, packet life 0x80 | subnet_timeout, SL 0, NumbPath 1, the request's other fields.
#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/multicast.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;

sa::Gid gid(std::string_view text) {
  return *sa::parse_gid(text);
}

TEST(SadMulticast, NoPartitionsFileGivesTheDefaultBroadcastGroup) {
  std::vector<MulticastGroup> groups = ipoib_broadcast_groups(policy::default_partitions({}), 18);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0],
            (MulticastGroup{gid("ff12:401b:ffff::ffff:ffff"), 0xC000, 0xFFFF, 0, 4, 3, 18}));
}

// The partitions of the ibsim experiment: MLIDs in file order, ipoib partitions only, sl=,
// mtu= and rate= of each, a partition defined twice keeps its first group.
TEST(SadMulticast, IpoibPartitionsGiveGroupsInFileOrder) {
  const char* text = R"(# comment: Fake=0x99, ipoib : ALL;
Other=0x50, ipoib, sl=2 : ALL=full;
Default=0x7fff, ipoib, sl=1 : ALL=full;
P1=0x10, ipoib, sl=3, mtu=5, rate=7 : ALL=full;
P2=0x20 : ALL=full;
P4=0x40,ipoib,mtu=1 : ALL=limited,
  0x201=full;
Again=0x50, ipoib, sl=9 : ALL=full;
)";
  auto parsed = policy::parse_partitions(text, {});
  ASSERT_TRUE(parsed.diagnostics.empty());
  std::vector<MulticastGroup> groups = ipoib_broadcast_groups(parsed.partitions, 16);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0],
            (MulticastGroup{gid("ff12:401b:8050::ffff:ffff"), 0xC000, 0x8050, 2, 4, 3, 16}));
  EXPECT_EQ(groups[1],
            (MulticastGroup{gid("ff12:401b:ffff::ffff:ffff"), 0xC001, 0xFFFF, 1, 4, 3, 16}));
  EXPECT_EQ(groups[2],
            (MulticastGroup{gid("ff12:401b:8010::ffff:ffff"), 0xC002, 0x8010, 3, 5, 7, 16}));
  EXPECT_EQ(groups[3],
            (MulticastGroup{gid("ff12:401b:8040::ffff:ffff"), 0xC003, 0x8040, 0, 1, 3, 16}));
}

TEST(SadMulticast, PathToTheGroupCopiesTheRequestAndWritesTheGroupsValues) {
  MulticastGroup g{gid("ff12:401b:ffff::ffff:ffff"), 0xC000, 0xFFFF, 1, 4, 3, 18};
  sa::PathRecord req{.service_id = 0x1060CBC, .dgid = g.mgid, .preference = 5};
  auto r = multicast_path(g, req, pr::kDgid | pr::kServiceId, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->service_id, 0x1060CBCu);
  EXPECT_EQ(r->dgid, g.mgid);
  EXPECT_EQ(r->sgid, sa::Gid{});
  EXPECT_EQ(r->dlid, 0xC000);
  EXPECT_EQ(r->slid, 0);
  EXPECT_EQ(r->numb_path, 1);
  EXPECT_FALSE(r->reversible);
  EXPECT_EQ(r->pkey, 0xFFFF);
  EXPECT_EQ(r->sl, 1);
  EXPECT_EQ(r->mtu_selector, sa::Selector::kExactly);
  EXPECT_EQ(r->mtu, 4);
  EXPECT_EQ(r->rate_selector, sa::Selector::kExactly);
  EXPECT_EQ(r->rate, 3);
  EXPECT_EQ(r->packet_life_selector, sa::Selector::kExactly);
  EXPECT_EQ(r->packet_life, 18);
  EXPECT_EQ(r->preference, 5);
}

TEST(SadMulticast, ComponentsThatMustMatchTheGroup) {
  MulticastGroup g{gid("ff12:401b:ffff::ffff:ffff"), 0xC000, 0xFFFF, 1, 4, 3, 18};
  auto path = [&](sa::PathRecord req, uint64_t mask, bool get = true) {
    req.dgid = g.mgid;
    return multicast_path(g, req, pr::kDgid | mask, get).has_value();
  };
  EXPECT_TRUE(path({.dlid = 0xC000}, pr::kDlid));
  EXPECT_FALSE(path({.dlid = 0xC001}, pr::kDlid));
  EXPECT_TRUE(path({.pkey = 0xFFFF}, pr::kPKey));
  EXPECT_FALSE(path({.pkey = 0x7FFF}, pr::kPKey));
  EXPECT_TRUE(path({.sl = 1}, pr::kSl));
  EXPECT_FALSE(path({.sl = 0}, pr::kSl));
  // No port has joined: a named source is never a member.
  EXPECT_FALSE(path({.slid = 2}, pr::kSlid));
  EXPECT_FALSE(path({.sgid = sa::make_gid(0xfe80000000000000ULL, 0x11)}, pr::kSgid));
  EXPECT_FALSE(path({.numb_path = 0}, pr::kNumbPath, false));
  EXPECT_TRUE(path({.numb_path = 0}, pr::kNumbPath, true));
  EXPECT_FALSE(path({.tclass = 4}, pr::kTClass));
  EXPECT_FALSE(path({.hop_limit = 1}, pr::kHopLimit));
  // MTU, rate and packet life are not checked.
  EXPECT_TRUE(
      path({.mtu_selector = sa::Selector::kGreaterThan, .mtu = 5}, pr::kMtu | pr::kMtuSelector));
}

TEST(SadMulticast, AnswerEngineAnswersKnownGroupsAndRefusesOthers) {
  FabricModel fabric = testing::small_model();
  std::vector<policy::Partition> partitions;
  std::vector<MulticastGroup> groups = ipoib_broadcast_groups(policy::default_partitions({}), 18);
  AnswerContext ctx;
  ctx.fabric = &fabric;
  ctx.partitions = &partitions;
  ctx.groups = &groups;
  auto ask = [&](std::string_view dgid, uint8_t method) {
    sa::SaMad m;
    m.mad.method = method;
    m.mad.attr_id = sa::attr::kPathRecord;
    m.sa.comp_mask = pr::kDgid;
    auto bytes = sa::encode_path_record({.dgid = gid(dgid)});
    m.data.assign(bytes->begin(), bytes->end());
    return answer(ctx, m);
  };
  auto known = ask("ff12:401b:ffff::ffff:ffff", sa::method::kGet);
  ASSERT_TRUE(known);
  EXPECT_EQ(known->mad.status, 0);
  EXPECT_EQ(sa::decode_path_record(known->data)->dlid, 0xC000);
  auto unknown = ask("ff12:401b:8001::ffff:ffff", sa::method::kGet);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->mad.status, 0x0300);  // NO_RECORDS
  auto table = ask("ff12:601b:ffff::1", sa::method::kGetTable);
  ASSERT_TRUE(table);
  EXPECT_EQ(table->mad.status, 0);
  EXPECT_TRUE(table->data.empty());
}

}  // namespace
}  // namespace rdmaqos::sad
