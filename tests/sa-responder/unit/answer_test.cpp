// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The answer engine against OpenSM's semantics (Documentation/opensm-semantics.md) on the
// hand-built subnet of test_fabric.h: expected values are written out from that document.
#include <gtest/gtest.h>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-responder/answer.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using testing::kA;
using testing::kB;
using testing::kC;
using testing::kSwitch;
using testing::small_model;

constexpr uint16_t kNoRecords = 0x0300;
constexpr uint16_t kReqInvalid = 0x0200;
constexpr uint16_t kInsufComps = 0x0600;

// A policy of DEFAULT and one level `name` with `fields` (OpenSM lines: "sl: 4\n..."), which
// one rule gives the queries its `criteria` select (OpenSM lines; none: every query).
std::string one_level_policy(const std::string& name, const std::string& fields,
                             const std::string& criteria = "") {
  return "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nqos-level\nname: " + name +
         "\n" + fields + "end-qos-level\nend-qos-levels\nqos-match-rules\nqos-match-rule\n" +
         criteria + "qos-level-name: " + name + "\nend-qos-match-rule\nend-qos-match-rules\n";
}

class AnswerTest : public ::testing::Test {
 protected:
  FabricModel fabric = small_model();
  policy::Fabric pfabric = fabric.policy_fabric();
  std::vector<policy::Partition> partitions;
  std::shared_ptr<const policy::CompiledPolicy> policy;

  void load(const std::string& text) {
    policy::CompileResult r = policy::load_policy(text, &pfabric);
    for (const auto& d : r.diagnostics)
      if (d.severity == rdmaqos::Severity::kError) ADD_FAILURE() << d.message;
    policy = r.policy;
  }

  AnswerContext ctx() const {
    AnswerContext c;
    c.fabric = &fabric;
    c.policy = policy.get();
    c.partitions = &partitions;
    return c;
  }

  static sa::SaMad request(uint8_t method, uint16_t attr, uint64_t mask,
                           std::vector<uint8_t> data) {
    sa::SaMad m;
    m.mad.method = method;
    m.mad.attr_id = attr;
    m.mad.tid = 0x1234;
    m.sa.comp_mask = mask;
    m.data = std::move(data);
    return m;
  }

  static sa::SaMad path_request(uint8_t method, const sa::PathRecord& pr_query, uint64_t mask) {
    auto bytes = sa::encode_path_record(pr_query);
    return request(method, sa::attr::kPathRecord, mask,
                   std::vector<uint8_t>(bytes->begin(), bytes->end()));
  }

  // A PathRecord request of `method` from LID `slid` to LID `dlid` with more fields in `extra` /
  // `mask`, and its Get and GetTable forms.
  static sa::SaMad between(uint8_t method, uint16_t slid, uint16_t dlid, sa::PathRecord extra,
                           uint64_t mask) {
    extra.slid = slid;
    extra.dlid = dlid;
    return path_request(method, extra, mask | pr::kSlid | pr::kDlid);
  }
  static sa::SaMad get(uint16_t slid, uint16_t dlid, sa::PathRecord extra = {}, uint64_t mask = 0) {
    return between(sa::method::kGet, slid, dlid, extra, mask);
  }
  static sa::SaMad get_table(uint16_t slid, uint16_t dlid, sa::PathRecord extra = {},
                             uint64_t mask = 0) {
    return between(sa::method::kGetTable, slid, dlid, extra, mask);
  }

  // A Get from a (LID 2) to c (LID 4) asking for an MTU, a rate or a packet life with its
  // selector (by default both in the mask).
  static sa::SaMad get_mtu(sa::Selector selector, uint8_t mtu,
                           uint64_t mask = pr::kMtu | pr::kMtuSelector) {
    return get(2, 4, {.mtu_selector = selector, .mtu = mtu}, mask);
  }
  static sa::SaMad get_rate(sa::Selector selector, uint8_t rate) {
    return get(2, 4, {.rate_selector = selector, .rate = rate}, pr::kRate | pr::kRateSelector);
  }
  static sa::SaMad get_life(sa::Selector selector, uint8_t life) {
    return get(2, 4, {.packet_life_selector = selector, .packet_life = life},
               pr::kPacketLife | pr::kPacketLifeSelector);
  }

  std::optional<sa::SaMad> ask(const sa::SaMad& req) const { return answer(ctx(), req); }

  // The one record of a successful Get.
  sa::PathRecord record(const sa::SaMad& req) const {
    auto resp = ask(req);
    EXPECT_TRUE(resp);
    if (!resp) return {};
    EXPECT_EQ(resp->mad.status, 0) << sa::mad_status_name(resp->mad.status);
    EXPECT_EQ(resp->mad.method, sa::method::kGetResp);
    auto r = sa::decode_path_record(resp->data);
    EXPECT_TRUE(r);
    return r ? *r : sa::PathRecord{};
  }

  uint16_t status(const sa::SaMad& req) const {
    auto resp = ask(req);
    EXPECT_TRUE(resp);
    return resp ? resp->mad.status : 0xFFFF;
  }
};

TEST_F(AnswerTest, WithoutPolicyThePathDecidesEverything) {
  sa::PathRecord r = record(get(2, 4));
  EXPECT_EQ(r.slid, 2);
  EXPECT_EQ(r.dlid, 4);
  EXPECT_EQ(r.sgid, sa::make_gid(0xFE80000000000000ULL, 0x11));
  EXPECT_EQ(r.dgid, sa::make_gid(0xFE80000000000000ULL, 0x31));
  EXPECT_EQ(r.mtu, 4);
  EXPECT_EQ(r.mtu_selector, sa::Selector::kExactly);
  EXPECT_EQ(r.rate, 7);
  EXPECT_EQ(r.rate_selector, sa::Selector::kExactly);
  EXPECT_EQ(r.packet_life, 18);  // subnet timeout
  EXPECT_EQ(r.packet_life_selector, sa::Selector::kExactly);
  EXPECT_TRUE(r.reversible);
  EXPECT_EQ(r.numb_path, 0);
  EXPECT_EQ(r.sl, 0);
  // Shared 0x0010 and 0x7FFF and 0x0040: byte-swapped order picks 0x0010 (0x1000) first, with
  // the source's membership bit.
  EXPECT_EQ(r.pkey, 0x8010);
}

TEST_F(AnswerTest, ByteSwappedOrderPutsHighBytePkeysFirst) {
  fabric.nodes[1].ports[1].pkeys.push_back(0x8100);
  fabric.nodes[3].ports[1].pkeys.push_back(0x0100);
  EXPECT_EQ(record(get(2, 4)).pkey, 0x8100);
}

TEST_F(AnswerTest, LimitedSourceGetsItsOwnMembershipBit) {
  EXPECT_EQ(record(get(3, 2)).pkey, 0x0010);
}

TEST_F(AnswerTest, PartitionSlAppliesWithoutPolicy) {
  partitions.push_back({"Data", 0x10, false, 3, {}, {}, {}, {}, {}});
  EXPECT_EQ(record(get(2, 4)).sl, 3);
}

TEST_F(AnswerTest, LevelCapsMtuRateAndSetsSlAndLife) {
  load(one_level_policy("Slow", "sl: 5\nmtu-limit: 2\nrate-limit: 3\npacket-life: 10\n",
                        "service-id: 0x100\n"));
  sa::PathRecord q;
  q.service_id = 0x100;
  sa::PathRecord r = record(get(2, 4, q, pr::kServiceId));
  EXPECT_EQ(r.sl, 5);
  EXPECT_EQ(r.mtu, 2);
  EXPECT_EQ(r.rate, 3);
  EXPECT_EQ(r.packet_life, 10);
  EXPECT_EQ(r.service_id, 0u);  // not echoed
  EXPECT_EQ(r.qos_class, 0);
  sa::PathRecord plain = record(get(2, 4));
  EXPECT_EQ(plain.sl, 0);
  EXPECT_EQ(plain.mtu, 4);
}

// rdma-qos's tclass rules see the TClass a requester names (ComponentMask bit 10, and bit 4 of
// a MultiPathRecord); a query without it never matches such a rule.
TEST_F(AnswerTest, TClassRuleMatchesTheTClassTheRequesterNames) {
  load(one_level_policy("Tc", "sl: 6\n", "tclass: 96-127\n"));
  EXPECT_EQ(record(get(2, 4, {.tclass = 104}, pr::kTClass)).sl, 6);
  EXPECT_EQ(record(get(2, 4, {.tclass = 8}, pr::kTClass)).sl, 0);
  EXPECT_EQ(record(get(2, 4, {.tclass = 104})).sl, 0);  // not in the mask: not named
}

TEST_F(AnswerTest, RateLimitComparesByDataRate) {
  // 30G (12x SDR) counts as slower than 40G: a 30G limit caps a 40G path.
  load(one_level_policy("R", "sl: 1\nrate-limit: 4\n"));
  EXPECT_EQ(record(get(2, 4)).rate, 4);
}

TEST_F(AnswerTest, SelectorsApplyAfterTheLevel) {
  load(one_level_policy("M3", "sl: 1\nmtu-limit: 3\n"));
  EXPECT_EQ(record(get_mtu(sa::Selector::kLessThan, 3)).mtu, 2);
  EXPECT_EQ(status(get_mtu(sa::Selector::kExactly, 4)), kNoRecords);
  EXPECT_EQ(status(get_mtu(sa::Selector::kGreaterThan, 3)), kNoRecords);
  // The value without its selector bit is ignored.
  EXPECT_EQ(record(get_mtu(sa::Selector::kGreaterThan, 3, pr::kMtu)).mtu, 3);
}

TEST_F(AnswerTest, RateLessThanTakesTheNextSlowerRate) {
  EXPECT_EQ(record(get_rate(sa::Selector::kLessThan, 6)).rate, 11);  // < 20G on 40G: 14G
  EXPECT_EQ(record(get_rate(sa::Selector::kExactly, 7)).rate, 7);
  EXPECT_EQ(status(get_rate(sa::Selector::kGreaterThan, 7)), kNoRecords);
}

TEST_F(AnswerTest, PacketLifeSelectors) {
  load(one_level_policy("P", "sl: 1\npacket-life: 8\n"));
  EXPECT_EQ(record(get_life(sa::Selector::kLessThan, 8)).packet_life, 7);
  EXPECT_EQ(status(get_life(sa::Selector::kExactly, 9)), kNoRecords);
}

TEST_F(AnswerTest, LoopbackHasPacketLifeZero) {
  load(one_level_policy("P", "sl: 1\npacket-life: 8\n"));
  EXPECT_EQ(record(get(2, 2)).packet_life, 0);
}

TEST_F(AnswerTest, RequestedSlMustBeTheLevelSl) {
  load(one_level_policy("L", "sl: 4\n"));
  sa::PathRecord q;
  q.sl = 3;
  EXPECT_EQ(status(get(2, 4, q, pr::kSl)), kNoRecords);
  q.sl = 4;
  EXPECT_EQ(record(get(2, 4, q, pr::kSl)).sl, 4);
}

TEST_F(AnswerTest, AnyValidSlMayBeRequestedWithoutPolicy) {
  sa::PathRecord q;
  q.sl = 7;
  EXPECT_EQ(record(get(2, 4, q, pr::kSl)).sl, 7);
}

TEST_F(AnswerTest, LevelSlDroppedByTheFabricGivesNoRecord) {
  fabric.nodes[1].ports[1].sl2vl[0][4] = 15;  // a's own table
  load(one_level_policy("L", "sl: 4\n"));
  EXPECT_EQ(status(get(2, 4)), kNoRecords);
}

TEST_F(AnswerTest, LevelPkeyIsTheLowestSharedWithoutMembershipBit) {
  load(one_level_policy("K", "sl: 2\npkey: 0x40,0x10\n"));
  EXPECT_EQ(record(get(2, 4)).pkey, 0x0010);
  // b is limited in 0x10 and a full: still shared; 0x40 is not held by b.
  EXPECT_EQ(record(get(3, 2)).pkey, 0x0010);
}

TEST_F(AnswerTest, LevelPkeyNotSharedGivesNoRecord) {
  load(one_level_policy("K", "sl: 2\npkey: 0x40\n"));
  EXPECT_EQ(status(get(2, 3)), kNoRecords);
}

TEST_F(AnswerTest, RequestedPkeyIsEchoedAsSent) {
  sa::PathRecord q;
  q.pkey = 0x0010;
  EXPECT_EQ(record(get(2, 4, q, pr::kPKey)).pkey, 0x0010);
  q.pkey = 0x8010;
  EXPECT_EQ(record(get(2, 4, q, pr::kPKey)).pkey, 0x8010);
  q.pkey = 0x0020;  // not shared
  EXPECT_EQ(status(get(2, 4, q, pr::kPKey)), kNoRecords);
}

TEST_F(AnswerTest, RequestedPkeyOutsideTheLevelIsRefused) {
  load(one_level_policy("K", "sl: 2\npkey: 0x40\n"));
  sa::PathRecord q;
  q.pkey = 0x7FFF;
  EXPECT_EQ(status(get(2, 4, q, pr::kPKey)), kNoRecords);
}

TEST_F(AnswerTest, RawTrafficAnswersPkeyZero) {
  sa::PathRecord q;
  q.raw_traffic = true;
  EXPECT_EQ(record(get(2, 4, q, pr::kRawTraffic)).pkey, 0);
}

TEST_F(AnswerTest, ReverseFailureClearsReversibleOrDropsTheRecord) {
  sa::PathRecord q;
  q.sl = 5;
  fabric.nodes[3].ports[1].sl2vl[0][5] = 15;  // c cannot send on SL 5
  EXPECT_FALSE(record(get(2, 4, q, pr::kSl)).reversible);
  q.reversible = true;
  EXPECT_EQ(status(get(2, 4, q, pr::kSl | pr::kReversible)), kNoRecords);
  q.reversible = false;
  EXPECT_FALSE(record(get(2, 4, q, pr::kSl | pr::kReversible)).reversible);
}

// a and c linked at 4x HDR on every port of the path (rate 17, 200G) would keep it; at 8x HDR
// (400G, rate 21) the record says 300G unless both ends announce HDR in CapabilityMask2.
TEST_F(AnswerTest, HdrOnlyRateNeedsBothEndsToAnnounceHdr) {
  for (int p : {1, 3}) fabric.nodes[0].ports[static_cast<size_t>(p)].rate = 21;
  for (int n : {1, 3}) {
    PortModel& port = fabric.nodes[static_cast<size_t>(n)].ports[1];
    port.rate = 21;
    port.capability_mask = kCapHasExtendedSpeeds | kCapHasCapabilityMask2;
    port.capability_mask2 = kCap2SpeedHdr;
  }
  EXPECT_EQ(record(get(2, 4)).rate, 21);
  fabric.nodes[3].ports[1].capability_mask2 = 0;  // c does not announce HDR
  EXPECT_EQ(record(get(2, 4)).rate, 18);
  fabric.nodes[3].ports[1].capability_mask2 = kCap2SpeedHdr;
  fabric.nodes[1].ports[1].capability_mask = kCapHasExtendedSpeeds;  // a: no CapabilityMask2
  EXPECT_EQ(record(get(2, 4)).rate, 18);
}

// The destination counts only on a reversible path: with c unable to send on SL 5, a's
// announcement alone decides.
TEST_F(AnswerTest, AnnouncedRateIgnoresTheDestinationOfAOneWayPath) {
  for (int p : {1, 3}) fabric.nodes[0].ports[static_cast<size_t>(p)].rate = 21;
  fabric.nodes[1].ports[1].rate = 21;
  fabric.nodes[3].ports[1].rate = 21;
  fabric.nodes[3].ports[1].capability_mask2 = 0;
  fabric.nodes[3].ports[1].sl2vl[0][5] = 15;
  sa::PathRecord q;
  q.sl = 5;
  sa::PathRecord r = record(get(2, 4, q, pr::kSl));
  EXPECT_FALSE(r.reversible);
  EXPECT_EQ(r.rate, 21);
}

TEST_F(AnswerTest, HalfAServiceIdIsInsufficientComponents) {
  EXPECT_EQ(status(get(2, 4, {}, pr::kServiceIdMsb)), kInsufComps);
  EXPECT_EQ(status(get(2, 4, {}, pr::kServiceIdLsb)), kInsufComps);
  EXPECT_EQ(record(get(2, 4, {}, pr::kServiceId)).slid, 2);  // ServiceID 0 is a value
}

TEST_F(AnswerTest, InvalidRateOrMtuIsRequestInvalid) {
  EXPECT_EQ(status(get_rate(sa::Selector::kGreaterThan, 1)), kReqInvalid);
  EXPECT_EQ(status(get_mtu(sa::Selector::kGreaterThan, 6)), kReqInvalid);
}

TEST_F(AnswerTest, GidAndLidNamingDifferentPortsIsRequestInvalid) {
  sa::PathRecord q;
  q.sgid = sa::make_gid(0xFE80000000000000ULL, 0x21);  // b, while SLID 2 is a
  EXPECT_EQ(status(get(2, 4, q, pr::kSgid)), kReqInvalid);
}

TEST_F(AnswerTest, UnknownEndIsNoRecordsInGetAndAnEmptyTable) {
  EXPECT_EQ(status(get(2, 99)), kNoRecords);
  auto resp = ask(get_table(2, 99));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  EXPECT_EQ(resp->mad.method, sa::method::kGetTableResp);
  EXPECT_TRUE(resp->data.empty());
}

TEST_F(AnswerTest, GetTableRejectionIsAnEmptyTable) {
  sa::PathRecord q;
  q.sl = 5;
  q.pkey = 0x20;
  auto resp = ask(get_table(2, 4, q, pr::kPKey));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  EXPECT_TRUE(resp->data.empty());
}

TEST_F(AnswerTest, GetTableAnswersWithAttributeOffset) {
  auto resp = ask(get_table(2, 4));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->sa.attr_offset, 8);
  EXPECT_EQ(resp->data.size(), 64u);
  EXPECT_EQ(resp->mad.tid, 0x1234u);
}

// As OpenSM (seen on ibsim with sa-raw-mad): a response that carries a record gives its size in
// 8-byte words, a Get's as a table's; an empty table gives 0.
TEST_F(AnswerTest, GetAnswersWithAttributeOffset) {
  auto resp = ask(get(2, 4));
  ASSERT_TRUE(resp);
  ASSERT_EQ(resp->mad.status, 0);
  EXPECT_EQ(resp->sa.attr_offset, 8);
}

TEST_F(AnswerTest, EmptyGetTableHasAttributeOffsetZero) {
  sa::PathRecord q;
  q.sl = 5;
  q.pkey = 0x20;  // refused (as in GetTableRejectionIsAnEmptyTable)
  auto resp = ask(get_table(2, 4, q, pr::kPKey));
  ASSERT_TRUE(resp);
  ASSERT_EQ(resp->mad.status, 0);
  ASSERT_TRUE(resp->data.empty());
  EXPECT_EQ(resp->sa.attr_offset, 0);
}

// A Get asks for one path: OpenSM stops at the first destination (ports in byte-swapped GUID
// order: the switch's 0x100 before a's 0x11) that gives one, never TOO_MANY_RECORDS.
TEST_F(AnswerTest, GetWithSeveralCandidatesAnswersTheFirst) {
  sa::PathRecord q;
  q.slid = 2;
  EXPECT_EQ(record(path_request(sa::method::kGet, q, pr::kSlid)).dlid, 1);
}

TEST_F(AnswerTest, NumbPathZeroGivesAnEmptyTable) {
  auto resp = ask(get_table(2, 4, {}, pr::kNumbPath));
  ASSERT_TRUE(resp);
  EXPECT_TRUE(resp->data.empty());
}

TEST_F(AnswerTest, NumbPathZeroIsIgnoredByGet) {
  sa::PathRecord q;
  EXPECT_EQ(record(get(2, 4, q, pr::kNumbPath)).dlid, 4);
}

TEST_F(AnswerTest, RequesterMustShareAPkeyWithBothEnds) {
  fabric.nodes[2].ports[1].pkeys = {0x8020};  // b now shares no pkey with a or c
  AnswerContext c = ctx();
  c.requester = kB;
  auto resp = answer(c, get(2, 4));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, kNoRecords);
  c.requester = kC;
  resp = answer(c, get(2, 4));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
}

TEST_F(AnswerTest, RequesterLidNamesItsPort) {
  AnswerContext c = ctx();
  c.set_requester_lid(3);
  EXPECT_EQ(c.requester, kB);
  EXPECT_FALSE(c.requester_unknown);
  c.set_requester_lid(1);  // the switch's port 0 asks too
  EXPECT_EQ(c.requester, kSwitch);
  c.set_requester_lid(9);
  EXPECT_EQ(c.requester, std::nullopt);
  EXPECT_TRUE(c.requester_unknown);
}

// OpenSM drops a PathRecord query from a LID it does not know (osm_pr_rcv_process, ERR 1F16):
// answering it would skip the partition check that the requester shares a PKey with both ends.
TEST_F(AnswerTest, PathRecordFromAnUnknownLidIsDropped) {
  AnswerContext c = ctx();
  c.set_requester_lid(9);
  EXPECT_FALSE(answer(c, get(2, 4)));
  EXPECT_FALSE(answer(c, get_table(2, 4)));
  EXPECT_FALSE(answer(c, path_request(sa::method::kGetTable, {}, 0)));
  // A multicast DGID too: OpenSM looks the requester up first.
  EXPECT_FALSE(answer(
      c, path_request(sa::method::kGet, {.dgid = sa::make_gid(0xFF12401BFFFF0000ULL, 0xFFFFFFFF)},
                      pr::kDgid)));
}

// Its prechecks come first in osm_pr_rcv_process: their statuses are answered to anyone.
TEST_F(AnswerTest, UnknownLidStillGetsTheStatusOfABadRequest) {
  AnswerContext c = ctx();
  c.set_requester_lid(9);
  auto bad_rate = answer(c, get(2, 4, {.rate_selector = sa::Selector::kExactly, .rate = 1},
                                pr::kRate | pr::kRateSelector));
  ASSERT_TRUE(bad_rate);
  EXPECT_EQ(bad_rate->mad.status, kReqInvalid);
  auto set = answer(c, path_request(0x02, {}, 0));
  ASSERT_TRUE(set);
  EXPECT_EQ(set->mad.status, 0x000C);
}

TEST_F(AnswerTest, ClassPortInfoIsAnsweredToAnUnknownLid) {
  AnswerContext c = ctx();
  c.set_requester_lid(9);
  auto resp = answer(c, request(sa::method::kGet, sa::attr::kClassPortInfo, 0, {}));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
}

TEST_F(AnswerTest, SetPathRecordIsUnsupportedMethodAttribute) {
  sa::PathRecord q;
  auto resp = ask(path_request(0x02, q, 0));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0x000C);
  EXPECT_EQ(resp->mad.method, sa::method::kGetResp);
}

TEST_F(AnswerTest, UnknownAttributeAndMethodAreAnswered) {
  EXPECT_EQ(status(request(sa::method::kGet, 0x0011, 0, {})), 0x000C);  // NodeRecord
  EXPECT_EQ(status(request(0x07, sa::attr::kPathRecord, 0, {})), 0x0008);
}

// Seen from OpenSM 3.3.23 with raw MADs (sa-responder.differential.SadRawMadDifferential).
TEST_F(AnswerTest, ClassPortInfoOtherThanGetIsAnInvalidRequest) {
  EXPECT_EQ(status(request(sa::method::kGetTable, sa::attr::kClassPortInfo, 0, {})), kReqInvalid);
}

TEST_F(AnswerTest, ClassVersionIsNotChecked) {
  sa::SaMad m = get(2, 4);
  m.mad.class_version = 1;
  EXPECT_EQ(status(m), 0);
}

// Raw traffic takes any shared PKey whatever the request names, and answers PKey 0.
TEST_F(AnswerTest, RawTrafficIgnoresTheRequestedPkey) {
  sa::PathRecord raw{.raw_traffic = true, .pkey = 0x1234};
  sa::PathRecord r = record(get(2, 4, raw, pr::kRawTraffic | pr::kPKey));
  EXPECT_EQ(r.pkey, 0);
  EXPECT_EQ(r.sl, 0);
  // Without the raw bit the same PKey is not shared: no record.
  EXPECT_EQ(status(get(2, 4, {.pkey = 0x1234}, pr::kPKey)), kNoRecords);
}

TEST_F(AnswerTest, ResponsesAreNotAnswered) {
  EXPECT_FALSE(ask(request(sa::method::kGetResp, sa::attr::kPathRecord, 0, {})));
}

// ClassPortInfo advertises what this SA answers (issue: OpenSM's 0x2602 / 0xB5EA promised
// notices, multicast and PortInfoRecords it never serves). Bits: IBA 15.2.1.1 and 13.4.8.1.
class ClassPortInfoTest : public AnswerTest {
 protected:
  sa::ClassPortInfo info() {
    auto resp = ask(request(sa::method::kGet, sa::attr::kClassPortInfo, 0, {}));
    EXPECT_TRUE(resp);
    if (!resp) return {};
    EXPECT_EQ(resp->mad.status, 0);
    auto decoded = sa::decode_class_port_info(resp->data);
    EXPECT_TRUE(decoded);
    return decoded ? *decoded : sa::ClassPortInfo{};
  }
  bool cap(int bit) { return (info().capability_mask >> bit & 1u) != 0; }
  bool cap2(int bit) { return (info().capability_mask2 >> bit & 1u) != 0; }
};

TEST_F(ClassPortInfoTest, MasksAreExactlyTheBitsThisSaServes) {
  EXPECT_EQ(info().capability_mask, 0x0400);
  EXPECT_EQ(info().capability_mask2, 0xA082u);
}

TEST_F(ClassPortInfoTest, RestOfTheAnswerIsOpenSms) {
  sa::ClassPortInfo i = info();
  EXPECT_EQ(i.resp_time_value, 0x10);
  EXPECT_EQ(i.base_version, 1);
  EXPECT_EQ(i.class_version, 2);
}

TEST_F(ClassPortInfoTest, MultiPathIsAdvertisedBecauseMultiPathRecordIsAnswered) {
  EXPECT_TRUE(cap(10));
  EXPECT_TRUE(info().multipath_supported());  // what sa-client reads
}

TEST_F(ClassPortInfoTest, QosIsAdvertisedBecauseEveryPathIsShapedByThePolicy) {
  EXPECT_TRUE(cap2(1));
  EXPECT_TRUE(info().qos_supported());  // what sa-client reads
}

TEST_F(ClassPortInfoTest, NoTrapsOrNoticesAreAdvertised) {
  EXPECT_FALSE(cap(0));  // IsTrapSupported
  EXPECT_FALSE(cap(1));  // IsNoticeSupported (Get/Set Notice, InformInfo)
}

TEST_F(ClassPortInfoTest, NoUdMulticastIsAdvertised) {
  EXPECT_FALSE(cap(9));  // IsUDMulticastSupported: MCMemberRecord joins
}

TEST_F(ClassPortInfoTest, NoReinitIsAdvertised) {
  EXPECT_FALSE(cap(11));
}

TEST_F(ClassPortInfoTest, NoPortInfoCapabilityMaskMatchingIsAdvertised) {
  EXPECT_FALSE(cap(13));   // PortInfoRecord queries by CapabilityMask
  EXPECT_FALSE(cap2(10));  // ... and by CapabilityMask2
}

TEST_F(ClassPortInfoTest, NoMulticastTopologyOrServiceRecordsAreAdvertised) {
  EXPECT_FALSE(cap2(3));   // IsMcastTopSupported
  EXPECT_FALSE(cap2(8));   // IsMulticastServiceRecsSupported
  EXPECT_FALSE(cap2(12));  // IsSendOnlyFullMemberSupported
}

TEST_F(ClassPortInfoTest, NoAliasGuidsOrFullPortInfoRecordsAreAdvertised) {
  EXPECT_FALSE(cap2(5));  // IsAliasGUIDsSupported
  EXPECT_FALSE(cap2(6));  // IsFullPortInfoRecSupported
}

// Our PathRecords carry OpenSM's rates, so they may hold these encodings.
TEST_F(ClassPortInfoTest, RateEncodingsOfOurPathRecordsAreAdvertised) {
  EXPECT_TRUE(cap2(7));   // IsExtendedSpeedsSupported
  EXPECT_TRUE(cap2(13));  // IsLinkWidth2xSupported
  EXPECT_TRUE(cap2(15));  // IsLinkSpeedHDRSupported
}

class MultiPathTest : public AnswerTest {
 protected:
  static sa::SaMad mpr(uint8_t method, const sa::MultiPathRecord& rec, uint64_t mask,
                       bool rmpp_active = true) {
    auto bytes = sa::encode_multipath_record(rec);
    sa::SaMad m = request(method, sa::attr::kMultiPathRecord, mask, *bytes);
    if (rmpp_active) m.rmpp.flags = sa::rmpp::kFlagActive;
    return m;
  }
  static sa::MultiPathRecord pairs(std::vector<uint64_t> src, std::vector<uint64_t> dst) {
    sa::MultiPathRecord r;
    for (uint64_t g : src) r.sgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
    for (uint64_t g : dst) r.dgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
    return r;
  }
  static constexpr uint64_t kCounts = sa::mpr_mask::kSgidCount | sa::mpr_mask::kDgidCount;
};

// As OpenSM's osm_mpr_rcv_process (ERR 4517), after the checks answered with a status.
TEST_F(MultiPathTest, MultiPathRecordFromAnUnknownLidIsDropped) {
  AnswerContext c = ctx();
  c.set_requester_lid(9);
  EXPECT_FALSE(answer(c, mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), kCounts)));
  auto no_counts = answer(c, mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), 0));
  ASSERT_TRUE(no_counts);
  EXPECT_EQ(no_counts->mad.status, kInsufComps);
}

TEST_F(MultiPathTest, GetMultiAnswersPathRecordsPerPair) {
  auto resp = ask(mpr(sa::method::kGetMulti, pairs({0x11, 0x21}, {0x31}), kCounts));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, 0);
  EXPECT_EQ(resp->mad.method, sa::method::kGetMultiResp);
  EXPECT_EQ(resp->mad.attr_id, sa::attr::kPathRecord);
  ASSERT_EQ(resp->data.size(), 128u);
  auto first = sa::decode_path_record(resp->data);
  auto second = sa::decode_path_record(std::span(resp->data).subspan(64));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->slid, 2);
  EXPECT_EQ(first->rate, 7);
  EXPECT_EQ(second->slid, 3);
  EXPECT_EQ(second->rate, 3);
}

TEST_F(MultiPathTest, LevelAppliesAsForPathRecord) {
  load(one_level_policy("S", "sl: 6\nmtu-limit: 1\n", "service-id: 0x200\n"));
  sa::MultiPathRecord r = pairs({0x11}, {0x31});
  r.service_id = 0x200;
  auto resp = ask(mpr(sa::method::kGetMulti, r, kCounts | sa::mpr_mask::kServiceId));
  ASSERT_TRUE(resp);
  auto rec = sa::decode_path_record(resp->data);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->sl, 6);
  EXPECT_EQ(rec->mtu, 1);
}

// (SLID, DLID) of each record of an answer, in order.
std::vector<std::pair<uint16_t, uint16_t>> lid_list(const std::optional<sa::SaMad>& resp) {
  std::vector<std::pair<uint16_t, uint16_t>> out;
  EXPECT_TRUE(resp);
  if (!resp) return out;
  EXPECT_EQ(resp->mad.status, 0) << sa::mad_status_name(resp->mad.status);
  for (size_t at = 0; at + sa::kPathRecordSize <= resp->data.size(); at += sa::kPathRecordSize) {
    auto r = sa::decode_path_record(std::span(resp->data).subspan(at));
    if (r) out.emplace_back(r->slid, r->dlid);
  }
  return out;
}

using LidList = std::vector<std::pair<uint16_t, uint16_t>>;

TEST_F(MultiPathTest, AlternatePathRequestOrdersEachEndByGuidAndTakesTheShorterDiagonal) {
  // Destinations c (0x31), a (0x11) are taken as a, c. Diagonal {a-a, b-c} scores 2 (a
  // loopback's 0 links do not count first), {a-c, b-a} 2 as well: the first wins the tie.
  sa::MultiPathRecord r = pairs({0x11, 0x21}, {0x31, 0x11});
  r.numb_path = 2;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts | sa::mpr_mask::kNumbPath))),
            (LidList{{2, 2}, {3, 4}}));
  // Destinations b, c: {a-b, b-c} scores 2, {a-c, b-b} 0 (a loopback second counts): the
  // second wins, answered S0-D1 then S1-D0.
  r = pairs({0x21, 0x11}, {0x31, 0x21});
  r.numb_path = 2;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts | sa::mpr_mask::kNumbPath))),
            (LidList{{2, 4}, {3, 3}}));
}

TEST_F(MultiPathTest, NumbPathTwoSelectsTheAlternatePathAnswerWithoutItsComponent) {
  sa::MultiPathRecord r = pairs({0x11, 0x21}, {0x31, 0x11});
  r.numb_path = 2;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts))), (LidList{{2, 2}, {3, 4}}));
  // Any other NumbPath walks the pairs in request order.
  r.numb_path = 3;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts | sa::mpr_mask::kNumbPath))),
            (LidList{{2, 4}, {2, 2}, {3, 4}}));
}

TEST_F(MultiPathTest, AlternatePathDiagonalsScoreOnlyThePathsTheyHave) {
  // b and c share no partition.
  fabric.nodes[2].ports[1].pkeys = {0x8002};
  fabric.nodes[1].ports[1].pkeys = {0xFFFF, 0x8002};
  fabric.nodes[3].ports[1].pkeys = {0xFFFF};
  // {a-a, b-c}: the loopback's 0 links do not count and b-c is missing: score 0; {a-c, b-a}
  // scores 2. The first diagonal wins and answers its one path.
  sa::MultiPathRecord r = pairs({0x11, 0x21}, {0x11, 0x31});
  r.numb_path = 2;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts))), (LidList{{2, 2}}));
  // {a-b, b-c} scores 2 (b-c missing); {a-c, b-b}: the loopback second counts, score 0.
  r = pairs({0x11, 0x21}, {0x21, 0x31});
  r.numb_path = 2;
  EXPECT_EQ(lid_list(ask(mpr(sa::method::kGetMulti, r, kCounts))), (LidList{{2, 4}, {3, 3}}));
}

TEST_F(MultiPathTest, GidsPastTheEleventhAreNotRead) {
  // 6 SGIDs and 6 DGIDs announced: the sixth DGID is dropped (it need not even be present).
  sa::MultiPathRecord r =
      pairs({0x11, 0x11, 0x11, 0x11, 0x11, 0x11}, {0x31, 0x31, 0x31, 0x31, 0x31});
  auto bytes = sa::encode_multipath_record(r);
  ASSERT_TRUE(bytes);
  (*bytes)[16] = 6;
  sa::SaMad m = request(sa::method::kGetMulti, sa::attr::kMultiPathRecord, kCounts, *bytes);
  m.rmpp.flags = sa::rmpp::kFlagActive;
  m.data.resize(sa::kSaDataSize);
  EXPECT_EQ(lid_list(ask(m)).size(), 30u);
}

TEST_F(MultiPathTest, OnlyGetMultiIsSupported) {
  EXPECT_EQ(status(mpr(sa::method::kGet, pairs({0x11}, {0x31}), kCounts)), 0x000C);
}

TEST_F(MultiPathTest, RequestMustBeRmppActive) {
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), kCounts, false)), kReqInvalid);
  // Before its method is looked at.
  EXPECT_EQ(status(mpr(sa::method::kGet, pairs({0x11}, {0x31}), kCounts, false)), kReqInvalid);
}

// As OpenSM's: the request's RMPP header, and the attribute PathRecord.
TEST_F(MultiPathTest, ErrorsAnswerWithThePathRecordAttributeAndTheRequestsRmppHeader) {
  auto resp = ask(mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), sa::mpr_mask::kSgidCount));
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, kInsufComps);
  EXPECT_EQ(resp->mad.method, sa::method::kGetMultiResp);
  EXPECT_EQ(resp->mad.attr_id, sa::attr::kPathRecord);
  EXPECT_TRUE(resp->rmpp.active());
  resp = ask(mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), kCounts, false));
  ASSERT_TRUE(resp);
  EXPECT_FALSE(resp->rmpp.active());
}

TEST_F(MultiPathTest, GidCountsAreMandatory) {
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}), sa::mpr_mask::kSgidCount)),
            kInsufComps);
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, pairs({0x11}, {0x31}),
                       kCounts | sa::mpr_mask::kServiceIdMsb)),
            kInsufComps);
}

// LMC: a's LIDs 4-5, c's 6-7 (LMC 1), b keeps LID 3; the switch forwards every LID.
class LmcTest : public MultiPathTest {
 protected:
  void SetUp() override {
    fabric.nodes[1].ports[1].lid = 4;
    fabric.nodes[1].ports[1].lmc = 1;
    fabric.nodes[3].ports[1].lid = 6;
    fabric.nodes[3].ports[1].lmc = 1;
    fabric.nodes[0].lft = {0xFF, 0, 0xFF, 2, 1, 1, 3, 3};
    fabric.index();
  }
  // The records of an answer, in order, as (SLID, DLID, preference).
  static std::vector<LidPair> lids_of(const std::optional<sa::SaMad>& resp) {
    std::vector<LidPair> out;
    EXPECT_TRUE(resp);
    if (!resp) return out;
    EXPECT_EQ(resp->mad.status, 0) << sa::mad_status_name(resp->mad.status);
    for (size_t at = 0; at + sa::kPathRecordSize <= resp->data.size(); at += sa::kPathRecordSize) {
      auto r = sa::decode_path_record(std::span(resp->data).subspan(at));
      if (r) out.push_back({r->slid, r->dlid, r->preference});
    }
    return out;
  }
  // A PathRecord request of `method` from a's GID to c's GID with more fields in `q` / `mask`;
  // a GetTable.
  static sa::SaMad a_to_c(uint8_t method, uint64_t mask = 0, sa::PathRecord q = {}) {
    q.sgid = sa::make_gid(0xFE80000000000000ULL, 0x11);
    q.dgid = sa::make_gid(0xFE80000000000000ULL, 0x31);
    return path_request(method, q, mask | pr::kSgid | pr::kDgid);
  }
  static sa::SaMad table(uint64_t mask, sa::PathRecord q = {}) {
    return a_to_c(sa::method::kGetTable, mask, q);
  }
};

TEST_F(LmcTest, LidPairsGoFullyRedundantFirstThenSourceMajor) {
  PortModel s, d;
  s.lid = 4;
  s.lmc = 1;
  d.lid = 8;
  d.lmc = 2;
  std::vector<LidPair> want = {{4, 8, 0},  {5, 9, 0}, {4, 9, 2},  {4, 10, 2},
                               {4, 11, 2}, {5, 8, 2}, {5, 10, 2}, {5, 11, 2}};
  EXPECT_EQ(lid_pairs(s, d), want);
  // One DLID: the source range against it; the pair at equal offsets first.
  want = {{4, 10, 0}, {5, 10, 2}};
  EXPECT_EQ(lid_pairs(s, d, 0, 10), want);
  want = {{5, 8, 0}, {5, 9, 2}, {5, 10, 2}, {5, 11, 2}};
  EXPECT_EQ(lid_pairs(s, d, 5, 0), want);
  d.lid = 0;
  EXPECT_TRUE(lid_pairs(s, d).empty());
}

TEST_F(LmcTest, AlternatePathsStartAtTheHashedLidOffset) {
  // S0 = a (LID 4), D0 = a, hashed in network byte order: 4 reads 0x400, so the offset is
  // ((0x400 >> 1) << 4 | 0x400 >> 1) % 103 = 52 for the first pair, 53 for the second: b (one
  // LID) to c's LID 6 + 53 % 2.
  sa::MultiPathRecord r = pairs({0x21, 0x11}, {0x31, 0x11});
  r.numb_path = 2;
  auto got = lids_of(ask(mpr(sa::method::kGetMulti, r, kCounts)));
  std::vector<LidPair> want = {{4, 4, 0}, {3, 7, 0}};
  EXPECT_EQ(got, want);
}

TEST_F(LmcTest, GetTableEnumeratesEveryCombination) {
  std::vector<LidPair> want = {{4, 6, 0}, {5, 7, 0}, {4, 7, 2}, {5, 6, 2}};
  EXPECT_EQ(lids_of(ask(table(0))), want);
}

TEST_F(LmcTest, NumbPathCountsPerPortPair) {
  sa::PathRecord q;
  q.numb_path = 3;
  std::vector<LidPair> want = {{4, 6, 0}, {5, 7, 0}, {4, 7, 2}};
  EXPECT_EQ(lids_of(ask(table(pr::kNumbPath, q))), want);
  q.numb_path = 0;
  EXPECT_TRUE(lids_of(ask(table(pr::kNumbPath, q))).empty());
}

TEST_F(LmcTest, NamedDlidNarrowsTheDestination) {
  sa::PathRecord q;
  q.dlid = 7;
  std::vector<LidPair> want = {{4, 7, 0}, {5, 7, 2}};
  EXPECT_EQ(lids_of(ask(table(pr::kDlid, q))), want);
}

TEST_F(LmcTest, GetAnswersTheFirstPath) {
  auto resp = ask(a_to_c(sa::method::kGet));
  std::vector<LidPair> want = {{4, 6, 0}};
  EXPECT_EQ(lids_of(resp), want);
  // A non-base SLID and DLID name the ports and that one path.
  sa::PathRecord r = record(get(5, 6));
  EXPECT_EQ(r.slid, 5);
  EXPECT_EQ(r.dlid, 6);
}

TEST_F(LmcTest, MultiPathNumbPathBoundsTheWholeAnswer) {
  sa::MultiPathRecord r = pairs({0x11}, {0x31, 0x21});
  r.numb_path = 5;
  auto resp = ask(mpr(sa::method::kGetMulti, r, kCounts | sa::mpr_mask::kNumbPath));
  // a->c gives its four, a->b (one LID) the fifth: a's first LID to b.
  std::vector<LidPair> want = {{4, 6, 0}, {5, 7, 0}, {4, 7, 2}, {5, 6, 2}, {4, 3, 0}};
  EXPECT_EQ(lids_of(resp), want);
}

TEST_F(MultiPathTest, GidsOfAnotherSubnetAreInvalid) {
  sa::MultiPathRecord r = pairs({0x11}, {0x31});
  r.dgids[0] = sa::make_gid(0xFEC0000000000000ULL, 0x31);
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, r, kCounts)), 0x0500);
  // fe80::/10 is link-local whatever the rest of the prefix: the GUID names the port.
  r.dgids[0] = sa::make_gid(0xFE80000000000001ULL, 0x31);
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, r, kCounts)), 0);
  r.dgids[0] = sa::make_gid(0xFE80000000000000ULL, 0x999);
  EXPECT_EQ(status(mpr(sa::method::kGetMulti, r, kCounts)), 0x0500);
}

TEST_F(AnswerTest, DgidOfAnotherSubnetGivesNoRecord) {
  sa::PathRecord q;
  q.slid = 2;
  q.dgid = sa::make_gid(0x20010DB800000001ULL, 0x31);
  EXPECT_EQ(status(path_request(sa::method::kGet, q, pr::kSlid | pr::kDgid)), kNoRecords);
  q.dgid = sa::make_gid(0xFE80000000000001ULL, 0x31);
  sa::PathRecord r = record(path_request(sa::method::kGet, q, pr::kSlid | pr::kDgid));
  EXPECT_EQ(r.dlid, 4);
  EXPECT_EQ(r.dgid, sa::make_gid(0xFE80000000000000ULL, 0x31));
  // A requested SGID comes back as asked.
  q.sgid = sa::make_gid(0xFE80000000000007ULL, 0x11);
  r = record(path_request(sa::method::kGet, q, pr::kSgid | pr::kDgid));
  EXPECT_EQ(r.slid, 2);
  EXPECT_EQ(r.sgid, q.sgid);
}

}  // namespace
}  // namespace rdmaqos::sad

namespace rdmaqos::sad {
namespace {

// SM_Key (OpenSM's SA MAD controller, ERR 1A04): 0 is untrusted, the SA key trusted, and both
// get the same PathRecord answer; any other key gets no answer at all.
class SmKeyTest : public AnswerTest {
 protected:
  sa::SaMad keyed(uint64_t key) const {
    sa::SaMad m = get(2, 4);
    m.sa.sm_key = key;
    return m;
  }
};

TEST_F(SmKeyTest, UntrustedAndTrustedRequestsGetTheSameRecord) {
  auto untrusted = ask(keyed(0));
  auto trusted = ask(keyed(kDefaultSaKey));
  ASSERT_TRUE(untrusted);
  ASSERT_TRUE(trusted);
  EXPECT_EQ(untrusted->mad.status, 0);
  EXPECT_EQ(untrusted->data, trusted->data);
}

TEST_F(SmKeyTest, WrongNonZeroKeyGetsNoAnswer) {
  EXPECT_FALSE(ask(keyed(2)));
  EXPECT_FALSE(ask(keyed(0xFFFFFFFFFFFFFFFFULL)));
}

TEST_F(SmKeyTest, ConfiguredSaKeyReplacesTheDefault) {
  AnswerContext c = ctx();
  c.sa_key = 0x1234;
  EXPECT_TRUE(answer(c, keyed(0x1234)));
  EXPECT_TRUE(answer(c, keyed(0)));
  EXPECT_FALSE(answer(c, keyed(kDefaultSaKey)));
}

TEST_F(SmKeyTest, WrongKeyDropsEvenUnsupportedMethods) {
  sa::SaMad m = keyed(7);
  m.mad.method = 0x02;  // Set
  EXPECT_FALSE(ask(m));
}

struct RecordingObserver : AnswerObserver {
  std::vector<std::pair<const policy::Level*, Rejection>> pairs;
  void pair(const policy::Level* level, Rejection r) override { pairs.emplace_back(level, r); }
};

TEST_F(AnswerTest, ObserverSeesTheLevelOfEveryPair) {
  load(one_level_policy("GOLD", "sl: 5\n", "qos-class: 7\n"));
  RecordingObserver seen;
  AnswerContext c = ctx();
  c.observer = &seen;
  sa::PathRecord extra;
  extra.qos_class = 7;
  ASSERT_TRUE(answer(c, get(2, 4, extra, pr::kQosClass)));
  ASSERT_EQ(seen.pairs.size(), 1u);
  ASSERT_NE(seen.pairs[0].first, nullptr);
  EXPECT_EQ(seen.pairs[0].first->name, "GOLD");
  EXPECT_EQ(seen.pairs[0].second, Rejection::kNone);
}

}  // namespace
}  // namespace rdmaqos::sad
