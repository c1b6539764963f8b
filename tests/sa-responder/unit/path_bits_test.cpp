// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// path-bits on a hand-built subnet where the LIDs of one port take different routes: a level's
// path-bits choose the destination LIDs, and the record describes the route of that LID.
#include <gtest/gtest.h>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/path_bits.h"
#include "two_route_fabric.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using testing::two_route_model;

constexpr uint16_t kNoRecords = 0x0300;

constexpr uint64_t kPinnedService = 0x10;
constexpr uint64_t kOtherService = 0x20;

class PathBitsTest : public ::testing::Test {
 protected:
  FabricModel fabric = two_route_model();
  policy::Fabric pfabric = fabric.policy_fabric();
  std::shared_ptr<const policy::CompiledPolicy> policy;

  // DEFAULT, and a level "Pinned" with `fields` (SL 0 unless they give one) that service ID
  // 0x10 gets.
  void load(std::string fields) {
    if (fields.find("sl:") == std::string::npos) fields = "sl: 0\n" + fields;
    const std::string text =
        "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
        "qos-level\nname: Pinned\n" +
        fields +
        "end-qos-level\nend-qos-levels\nqos-match-rules\nqos-match-rule\n"
        "service-id: 0x10\nqos-level-name: Pinned\nend-qos-match-rule\nend-qos-match-rules\n";
    policy::CompileResult r = policy::load_policy(text, &pfabric);
    for (const auto& d : r.diagnostics)
      if (d.severity == rdmaqos::Severity::kError) ADD_FAILURE() << d.message;
    policy = r.policy;
  }

  std::optional<sa::SaMad> ask(uint8_t method, uint64_t src_guid, uint64_t dst_guid,
                               uint64_t service, uint64_t mask = 0, sa::PathRecord q = {}) const {
    q.sgid = sa::make_gid(0xFE80000000000000ULL, src_guid);
    q.dgid = sa::make_gid(0xFE80000000000000ULL, dst_guid);
    q.service_id = service;
    auto bytes = sa::encode_path_record(q);
    sa::SaMad m;
    m.mad.method = method;
    m.mad.attr_id = sa::attr::kPathRecord;
    m.sa.comp_mask = mask | pr::kSgid | pr::kDgid | pr::kServiceIdMsb | pr::kServiceIdLsb;
    m.data.assign(bytes->begin(), bytes->end());
    AnswerContext c;
    c.fabric = &fabric;
    c.policy = policy.get();
    return answer(c, m);
  }

  std::vector<sa::PathRecord> records(const std::optional<sa::SaMad>& resp) const {
    std::vector<sa::PathRecord> out;
    EXPECT_TRUE(resp);
    if (!resp || resp->mad.status != 0) return out;
    for (size_t at = 0; at + sa::kPathRecordSize <= resp->data.size(); at += sa::kPathRecordSize) {
      auto r = sa::decode_path_record(std::span(resp->data).subspan(at));
      if (r) out.push_back(*r);
    }
    return out;
  }

  // The one record of a Get from a to b.
  sa::PathRecord get_a_to_b(uint64_t service) const {
    auto r = records(ask(sa::method::kGet, 0x11, 0x21, service));
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? sa::PathRecord{} : r[0];
  }

  static std::vector<std::pair<uint16_t, uint16_t>> lids(const std::vector<sa::PathRecord>& rs) {
    std::vector<std::pair<uint16_t, uint16_t>> out;
    for (const auto& r : rs) out.emplace_back(r.slid, r.dlid);
    return out;
  }
};

// The compiled level carries its path-bits, so the answer reads them from the level it matched
// instead of looking the level up in the policy's text for every pair.
TEST_F(PathBitsTest, TheCompiledLevelCarriesItsPathBits) {
  load("path-bits: 1,3\n");
  ASSERT_TRUE(policy);
  const policy::Level& pinned = policy->rule_level(0);
  ASSERT_EQ(pinned.name, "Pinned");
  const policy::RangeList* bits = level_path_bits(pinned);
  ASSERT_NE(bits, nullptr);
  ASSERT_EQ(bits->size(), 2u);
  EXPECT_EQ((*bits)[0].low, 1u);
  EXPECT_EQ((*bits)[1].low, 3u);
  EXPECT_EQ(level_path_bits(policy->default_level()), nullptr);
}

TEST_F(PathBitsTest, ALevelWithoutPathBitsKeepsOpenSmsFirstLid) {
  load("path-bits: 1\n");
  sa::PathRecord r = get_a_to_b(kOtherService);
  EXPECT_EQ(r.dlid, 8);
  EXPECT_EQ(r.rate, 7);
  EXPECT_EQ(r.mtu, 4);
}

TEST_F(PathBitsTest, PathBitsChooseTheDlidAndTheRecordDescribesItsRoute) {
  load("path-bits: 1\n");
  sa::PathRecord r = get_a_to_b(kPinnedService);
  EXPECT_EQ(r.slid, 5);  // the fully redundant pair comes first, as in OpenSM's order
  EXPECT_EQ(r.dlid, 9);
  EXPECT_EQ(r.rate, 3);  // over the 4x SDR link
  EXPECT_EQ(r.mtu, 3);
  load("path-bits: 2\n");
  r = get_a_to_b(kPinnedService);
  EXPECT_EQ(r.dlid, 10);
  EXPECT_EQ(r.rate, 7);
  EXPECT_EQ(r.mtu, 4);
}

TEST_F(PathBitsTest, GetTableKeepsOpenSmsOrderAmongTheAllowedLids) {
  load("path-bits: 1,3\n");
  auto got = lids(records(ask(sa::method::kGetTable, 0x11, 0x21, kPinnedService)));
  std::vector<std::pair<uint16_t, uint16_t>> want = {{5, 9}, {4, 9}, {4, 11}, {5, 11}};
  EXPECT_EQ(got, want);
}

TEST_F(PathBitsTest, ValuesBeyondTheDestinationsLmcAreIgnored) {
  // a has LMC 1: of 1 and 3 only 1 names one of its LIDs.
  load("path-bits: 1,3\n");
  auto got = lids(records(ask(sa::method::kGetTable, 0x21, 0x11, kPinnedService)));
  std::vector<std::pair<uint16_t, uint16_t>> want = {{9, 5}, {8, 5}, {10, 5}, {11, 5}};
  EXPECT_EQ(got, want);
  // None fits: every LID, in OpenSM's order.
  load("path-bits: 2-3\n");
  got = lids(records(ask(sa::method::kGetTable, 0x21, 0x11, kPinnedService)));
  want = {{8, 4}, {9, 5}, {8, 5}, {9, 4}, {10, 4}, {10, 5}, {11, 4}, {11, 5}};
  EXPECT_EQ(got, want);
}

TEST_F(PathBitsTest, AnSlThatTheChosenRouteDropsGivesNoRecord) {
  // SL 5 reaches VL 15 on the slow link only: b's odd LIDs from a have no path.
  load("sl: 5\npath-bits: 1\n");
  auto resp = ask(sa::method::kGet, 0x11, 0x21, kPinnedService);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->mad.status, kNoRecords);
  load("sl: 5\npath-bits: 0\n");
  EXPECT_EQ(get_a_to_b(kPinnedService).dlid, 8);
}

TEST_F(PathBitsTest, ADlidTheRequestNamesIsAnsweredAsAsked) {
  load("path-bits: 1\n");
  sa::PathRecord q;
  q.dlid = 10;
  auto got = lids(records(ask(sa::method::kGetTable, 0x11, 0x21, kPinnedService, pr::kDlid, q)));
  std::vector<std::pair<uint16_t, uint16_t>> want = {{4, 10}, {5, 10}};
  EXPECT_EQ(got, want);
}

// An alternate-path request (two SGIDs, two DGIDs, NumbPath 2): sources sw1 and a, destinations
// sw2 and b, ordered by GUID as OpenSM orders them (the switches first). The LID offset hashed
// from sw1's and sw2's LIDs is 19 (((0x100 >> 2) << 4 | 0x200 >> 2) % 103), a's pairs take 20:
// a's offset 0, b's offset 0, which OpenSM's two tries (LMC 1 against LMC 2) advance to 1 only.
// Path-bits 3 need b's fourth LID: every offset of b is tried, so a's LID 5 reaches LID 11.
TEST_F(PathBitsTest, AlternatePathsReachAnAllowedDlidPastTheShorterRange) {
  load("path-bits: 3\n");
  sa::MultiPathRecord m;
  for (uint64_t g : {0x11, 0x100}) m.sgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
  for (uint64_t g : {0x21, 0x200}) m.dgids.push_back(sa::make_gid(0xFE80000000000000ULL, g));
  m.numb_path = 2;
  m.service_id = kPinnedService;
  auto bytes = sa::encode_multipath_record(m);
  ASSERT_TRUE(bytes);
  sa::SaMad req;
  req.mad.method = sa::method::kGetMulti;
  req.mad.attr_id = sa::attr::kMultiPathRecord;
  req.rmpp.flags = sa::rmpp::kFlagActive;
  req.sa.comp_mask = sa::mpr_mask::kSgidCount | sa::mpr_mask::kDgidCount |
                     sa::mpr_mask::kServiceIdMsb | sa::mpr_mask::kServiceIdLsb;
  req.data = *bytes;
  AnswerContext c;
  c.fabric = &fabric;
  c.policy = policy.get();
  auto got = lids(records(answer(c, req)));
  // The diagonal {sw1-sw2, a-b} scores 1 link against 2 for {sw1-b, a-sw2}.
  std::vector<std::pair<uint16_t, uint16_t>> want = {{1, 2}, {5, 11}};
  EXPECT_EQ(got, want);
}

TEST_F(PathBitsTest, AllowedOffsetsAreTheValuesBelowTwoToTheLmc) {
  policy::RangeList bits = {{1, 1}, {3, 9}};
  LidOffsets o = allowed_dlid_offsets(&bits, 2);
  EXPECT_EQ(o.count(), 2u);
  EXPECT_TRUE(o.test(1));
  EXPECT_TRUE(o.test(3));
  EXPECT_EQ(allowed_dlid_offsets(nullptr, 2).count(), 4u);
  EXPECT_EQ(allowed_dlid_offsets(&bits, 0).count(), 1u);  // nothing fits: the base LID
}

TEST_F(PathBitsTest, ValuesBeyondTheSubnetsLmcWarnAtTheLevel) {
  // The subnet's LMC is b's 2: values 0-3 name LIDs, 4 and up none.
  load("path-bits: 1,3-6,9\n");
  rdmaqos::Diagnostics d = path_bits_warnings(*policy, fabric);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, rdmaqos::Severity::kWarning);
  EXPECT_EQ(d[0].location.line, 6);  // the qos-level line of "Pinned"
  EXPECT_NE(d[0].message.find("4-6,9"), std::string::npos) << d[0].message;
  load("path-bits: 0-3\n");
  EXPECT_TRUE(path_bits_warnings(*policy, fabric).empty());
}

}  // namespace
}  // namespace rdmaqos::sad
