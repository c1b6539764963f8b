// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's subscription to the SM's traps: the InformInfo and Notice layouts (IBA
// 15.2.5.12 and 14.2.5.1, as OpenSM's SA reads and writes them), the rounds of Sets, the reports
// and the re-discoveries they start.
#include "rdma-qos/sa-responder/trap_subscription.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;
using Clock = TrapSubscription::Clock;
using Received = TrapSubscription::Received;

constexpr uint16_t kSm = 1;
constexpr uint16_t kUs = 9;

// The SM's answer to `set`: its InformInfo back, with `status`.
sa::SaMad answer_to(const sa::SaMad& set, uint16_t status = 0) {
  sa::SaMad a = set;
  a.mad.method = sa::method::kGetResp;
  a.mad.status = status;
  // The MAD layer's agent number in the upper half of the TID.
  a.mad.tid |= uint64_t{0x1234} << 32;
  return a;
}

sa::SaMad report(uint16_t trap, uint8_t type = 4) {
  sa::SaMad r;
  r.mad.method = sa::method::kReport;
  r.mad.attr_id = sa::attr::kNotice;
  r.mad.tid = 0x02DAB001;
  r.data.assign(sa::kSaDataSize, 0);
  r.data[0] = static_cast<uint8_t>(0x80 | type);
  r.data[1] = 0x00;
  r.data[2] = 0x00;
  r.data[3] = 0x04;  // producer: SM
  sa::wire::put16(r.data.data() + 4, trap);
  sa::wire::put16(r.data.data() + 6, kSm);
  if (trap == 128) sa::wire::put16(r.data.data() + 10, 7);
  if (trap == 64 || trap == 65) {
    r.data[16] = 0xfe;
    r.data[17] = 0x80;
    r.data[31] = 0x03;
  }
  return r;
}

// The first round of Sets, accepted by the SM.
void subscribe(TrapSubscription& s, Clock::time_point t0) {
  for (const auto& set : s.due(t0, kSm, kUs)) s.received(answer_to(set), kSm, t0);
}

TEST(TrapSubscriptionWire, InformInfoSubscribesToOneGenericTrapFromEveryIssuer) {
  sa::SaMad set = inform_info_set(128, true, 7);
  EXPECT_EQ(set.mad.method, sa::method::kSet);
  EXPECT_EQ(set.mad.attr_id, sa::attr::kInformInfo);
  EXPECT_EQ(set.mad.tid, 7u);
  EXPECT_EQ(set.sa.comp_mask, 0u);
  EXPECT_EQ(set.sa.sm_key, 0u);  // OpenSM ignores a non-zero SM_Key that is not its own
  ASSERT_EQ(set.data.size(), kInformInfoSize);
  const uint8_t* d = set.data.data();
  EXPECT_TRUE(std::all_of(d, d + 16, [](uint8_t b) { return b == 0; }));  // GID
  EXPECT_EQ(sa::wire::get16(d + 16), 0xFFFF);                             // every LID
  EXPECT_EQ(sa::wire::get16(d + 18), 0);
  EXPECT_EQ(d[22], 1);                          // IsGeneric
  EXPECT_EQ(d[23], 1);                          // Subscribe
  EXPECT_EQ(sa::wire::get16(d + 24), 0xFFFF);   // any type
  EXPECT_EQ(sa::wire::get16(d + 26), 128);      // TrapNumber
  EXPECT_EQ(sa::wire::get32(d + 28) >> 8, 1u);  // QPN 1
  EXPECT_EQ(sa::wire::get32(d + 28) & 0x1F, 18u);
  EXPECT_EQ(d[33], 0xFF);  // any producer
  EXPECT_EQ(d[34], 0xFF);
  EXPECT_EQ(d[35], 0xFF);
  // The unsubscription repeats every field the SM compares, Subscribe aside.
  sa::SaMad back = inform_info_set(128, false, 8);
  EXPECT_EQ(back.data[23], 0);
  back.data[23] = 1;
  EXPECT_EQ(back.data, set.data);
}

TEST(TrapSubscriptionWire, NoticesDecodeTheirSubjects) {
  auto n = decode_notice(report(65).data);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_TRUE(n->generic);
  EXPECT_EQ(n->type, 4);
  EXPECT_EQ(n->producer, 4u);
  EXPECT_EQ(n->trap, 65);
  EXPECT_EQ(n->issuer_lid, kSm);
  EXPECT_EQ(n->subject_gid[0], 0xfe);
  EXPECT_EQ(describe(*n), "trap 65 (GID out of service) of fe80::3");
  auto link = decode_notice(report(128, 1).data);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->switch_lid, 7);
  EXPECT_EQ(describe(*link), "trap 128 (link state change) at switch LID 7");
  EXPECT_FALSE(decode_notice(std::vector<uint8_t>(79, 0)));
}

TEST(TrapSubscription, SubscribesOnceThenRenews) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  auto sets = s.due(t0, kSm, kUs);
  ASSERT_EQ(sets.size(), 4u);
  std::vector<uint16_t> traps;
  for (const auto& set : sets) traps.push_back(sa::wire::get16(set.data.data() + 26));
  EXPECT_EQ(traps, (std::vector<uint16_t>{64, 65, 128, 144}));
  EXPECT_TRUE(s.due(t0 + 1s, kSm, kUs).empty());  // waiting for the answers
  std::string log;
  for (size_t i = 0; i < sets.size(); ++i) {
    auto out = s.received(answer_to(sets[i]), kSm, t0);
    EXPECT_EQ(out.kind, Received::kAnswer);
    EXPECT_FALSE(out.reply);
    if (i + 1 == sets.size()) log = out.log;
  }
  EXPECT_NE(log.find("subscribed to the SM's traps 64, 65, 128, 144 at LID 1"), std::string::npos)
      << log;
  EXPECT_EQ(s.status().subscribed.size(), 4u);
  EXPECT_FALSE(s.status().problem);
  EXPECT_TRUE(s.due(t0 + 299s, kSm, kUs).empty());
  auto renewal = s.due(t0 + 300s, kSm, kUs);
  ASSERT_EQ(renewal.size(), 4u);
  // A renewal the SM accepts again says nothing.
  for (const auto& set : renewal) EXPECT_EQ(s.received(answer_to(set), kSm, t0).log, "");
  // An answer to a Set nobody waits for any more.
  EXPECT_EQ(s.received(answer_to(renewal[0]), kSm, t0).kind, Received::kStale);
}

TEST(TrapSubscription, NewSmLidSubscribesThereAtOnce) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  auto sets = s.due(t0 + 10s, 5, kUs);
  EXPECT_EQ(sets.size(), 4u);
  EXPECT_EQ(s.status().sm_lid, 5);
  EXPECT_TRUE(s.status().subscribed.empty());
}

TEST(TrapSubscription, NoSmOrOurOwnPortGetsNoSets) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  EXPECT_TRUE(s.due(t0, 0, kUs).empty());
  EXPECT_TRUE(s.due(t0, kUs, kUs).empty());  // the SA took over the SM's port
  EXPECT_EQ(s.status().sm_lid, 0);
}

TEST(TrapSubscription, UnansweredSetsAreRetriedAndSaidOnce) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  ASSERT_EQ(s.due(t0, kSm, kUs).size(), 4u);
  std::string log;
  EXPECT_TRUE(s.due(t0 + 5s, kSm, kUs, &log).empty());
  EXPECT_NE(log.find("did not answer the subscription to traps 64, 65, 128, 144"),
            std::string::npos)
      << log;
  ASSERT_TRUE(s.status().problem);
  EXPECT_TRUE(s.due(t0 + 34s, kSm, kUs).empty());
  ASSERT_EQ(s.due(t0 + 35s, kSm, kUs).size(), 4u);
  log.clear();
  EXPECT_TRUE(s.due(t0 + 40s, kSm, kUs, &log).empty());
  EXPECT_EQ(log, "");  // the same problem again: not said again
}

TEST(TrapSubscription, ARefusalIsReportedWithItsStatus) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  auto sets = s.due(t0, kSm, kUs);
  std::string log;
  for (size_t i = 0; i < sets.size(); ++i) {
    auto out = s.received(answer_to(sets[i], i == 2 ? 0x0200 : 0), kSm, t0);
    if (!out.log.empty()) log = out.log;
  }
  EXPECT_NE(log.find("refused the subscription (trap 128: SA_REQ_INVALID)"), std::string::npos)
      << log;
  EXPECT_EQ(s.status().subscribed, (std::vector<uint16_t>{64, 65, 144}));
  EXPECT_EQ(s.due(t0 + 30s, kSm, kUs).size(), 4u);
}

TEST(TrapSubscription, ABurstOfReportsRediscoversOnceAfterItSettlesThenLooksAgain) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  auto first = s.received(report(128, 1), kSm, t0);
  EXPECT_EQ(first.kind, Received::kReport);
  ASSERT_TRUE(first.reply);
  EXPECT_EQ(first.reply->mad.method, sa::method::kReportResp);
  EXPECT_EQ(first.reply->mad.tid, 0x02DAB001u);
  EXPECT_EQ(first.reply->data.size(), kNoticeSize);
  EXPECT_EQ(first.log, "the SM reports trap 128 (link state change) at switch LID 7");
  EXPECT_EQ(s.received(report(65), kSm, t0 + 1s).log, "");  // the same burst: one line
  EXPECT_EQ(s.received(report(65), kSm, t0 + 1500ms).log, "");
  EXPECT_FALSE(s.rediscovery_due(t0 + 3s));  // 2 s after the last report
  std::string why;
  EXPECT_TRUE(s.rediscovery_due(t0 + 3500ms, &why));
  EXPECT_EQ(why, "the SM reported traps 65, 128");
  EXPECT_FALSE(s.rediscovery_due(t0 + 4s));
  EXPECT_FALSE(s.rediscovery_due(t0 + 31s));
  EXPECT_TRUE(s.rediscovery_due(t0 + 31500ms, &why));  // 30 s after the last 65 or 128
  EXPECT_EQ(why, "a second look after the SM's re-routing");
  EXPECT_FALSE(s.rediscovery_due(t0 + 100s));
  auto st = s.status();
  EXPECT_EQ(st.reports[65], 2u);
  EXPECT_EQ(st.reports[128], 1u);
  EXPECT_EQ(st.rediscoveries, 2u);
}

TEST(TrapSubscription, ANewPortNeedsNoSecondLook) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  s.received(report(64), kSm, t0);
  EXPECT_TRUE(s.rediscovery_due(t0 + 2s));
  EXPECT_FALSE(s.rediscovery_due(t0 + 60s));
}

TEST(TrapSubscription, ReportsFromElsewhereAreAnsweredAndIgnored) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  auto out = s.received(report(64), 42, t0);
  EXPECT_EQ(out.kind, Received::kNotFromSm);
  EXPECT_TRUE(out.reply);
  EXPECT_NE(out.log.find("a report from LID 42, not the SM's (1): ignored"), std::string::npos);
  EXPECT_EQ(s.received(report(64), 42, t0).log, "");  // said once
  EXPECT_FALSE(s.rediscovery_due(t0 + 10s));
  EXPECT_EQ(s.status().not_from_sm, 2u);
  // Another trap from the SM is counted, answered, and re-discovers nothing.
  auto other = s.received(report(66), kSm, t0);
  EXPECT_EQ(other.kind, Received::kReport);
  EXPECT_FALSE(s.rediscovery_due(t0 + 10s));
  EXPECT_EQ(s.status().reports[66], 1u);
}

TEST(TrapSubscription, QueriesAreNotOurs) {
  TrapSubscription s;
  sa::SaMad query;
  query.mad.method = sa::method::kGet;
  query.mad.attr_id = sa::attr::kPathRecord;
  EXPECT_EQ(s.received(query, kSm, Clock::now()).kind, Received::kNotOurs);
  // A client's own subscription to this SA is a query too.
  EXPECT_EQ(s.received(inform_info_set(64, true, 1), kSm, Clock::now()).kind, Received::kNotOurs);
}

TEST(TrapSubscription, StatusIsTheStatsObject) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  s.received(report(65), kSm, t0);
  const nlohmann::json j = to_json(s.status());
  EXPECT_EQ(j["enabled"], true);
  EXPECT_EQ(j["sm_lid"], kSm);
  EXPECT_EQ(j["subscribed"], nlohmann::json({64, 65, 128, 144}));
  EXPECT_TRUE(j["problem"].is_null());
  EXPECT_EQ(j["reports"], nlohmann::json({{"65", 1}}));
  EXPECT_EQ(j["reports_not_from_sm"], 0);
  EXPECT_EQ(j["rediscoveries"], 0);
}

TEST(TrapSubscription, UnsubscribesWhatTheSmAccepted) {
  const auto t0 = Clock::now();
  TrapSubscription s;
  subscribe(s, t0);
  uint16_t sm = 0;
  auto sets = s.unsubscribe(&sm);
  EXPECT_EQ(sm, kSm);
  ASSERT_EQ(sets.size(), 4u);
  for (const auto& set : sets) EXPECT_EQ(set.data[23], 0);
  EXPECT_TRUE(s.unsubscribe(&sm).empty());
}

}  // namespace
}  // namespace rdmaqos::sad
