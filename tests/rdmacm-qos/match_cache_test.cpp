// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The cache of host-side policy matches: a connection to a service already matched gets the
// cached level, a new policy (a reload) empties it so no level of the old one is returned, and
// it stays bounded.
#include "rdma-qos/rdmacm-qos/match_cache.h"

#include <gtest/gtest.h>

namespace rdmaqos::rdmacm {
namespace {

// Port 7512 of RDMA_PS_TCP gets level BENCH (SL 3); anything else DEFAULT (SL 0).
std::shared_ptr<const policy::CompiledPolicy> policy_with_bench_sl(int sl) {
  const std::string text =
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: BENCH\nsl: " +
      std::to_string(sl) +
      "\nend-qos-level\nend-qos-levels\n"
      "qos-match-rules\nqos-match-rule\nservice-id: 0x1061d58\nqos-level-name: BENCH\n"
      "end-qos-match-rule\nend-qos-match-rules\n";
  auto p = load_host_policy(text, "cache-test.conf");
  EXPECT_TRUE(p.policy);
  return p.policy;
}

constexpr uint64_t kBenchSid = 0x1061d58;

CmSettings cached_settings(int bench_sl) {
  CmSettings s;
  s.sl2tclass = *parse_sl2tclass("0,32,136,104");
  s.policy = policy_with_bench_sl(bench_sl);
  cache_matches(s);
  return s;
}

TEST(MatchCache, ASecondConnectionToTheServiceGetsTheCachedDecision) {
  CmSettings s = cached_settings(3);
  auto first = decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->level, "BENCH");
  EXPECT_EQ(s.match_cache->size(), 1u);
  // What the cache holds is what the second connection gets, without a match: a stand-in entry
  // shows it.
  CmDecision planted = *first;
  planted.level = "PLANTED";
  s.match_cache->insert(s.policy, MatchKey{kBenchSid, std::nullopt, 0xFFFF, std::nullopt}, planted);
  auto second = decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->level, "PLANTED");
  EXPECT_EQ(s.match_cache->size(), 1u);
}

TEST(MatchCache, TheCachedDecisionIsTheMatchOne) {
  CmSettings cached = cached_settings(3);
  CmSettings uncached = cached;
  uncached.match_cache = nullptr;
  for (int round = 0; round < 2; ++round) {
    for (auto [sid, qos_class, tclass] :
         {std::tuple<uint64_t, std::optional<uint16_t>, std::optional<uint8_t>>{
              kBenchSid, std::nullopt, std::nullopt},
          {kBenchSid, 32, 32},
          {0x1061d59, std::nullopt, std::nullopt}}) {
      auto a = decide_roce(sid, qos_class, 0xFFFF, cached, tclass);
      auto b = decide_roce(sid, qos_class, 0xFFFF, uncached, tclass);
      ASSERT_EQ(a.has_value(), b.has_value());
      EXPECT_EQ(a->level, b->level);
      EXPECT_EQ(a->sl, b->sl);
      EXPECT_EQ(a->traffic_class, b->traffic_class);
      EXPECT_EQ(a->qos_class, b->qos_class);
      EXPECT_EQ(a->match_tclass, b->match_tclass);
      EXPECT_EQ(a->service_id, sid);
    }
  }
  EXPECT_EQ(cached.match_cache->size(), 3u);
}

TEST(MatchCache, KeysTellServiceClassPkeyAndTrafficClassApart) {
  CmSettings s = cached_settings(3);
  decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  decide_roce(kBenchSid, 5, 0xFFFF, s);
  decide_roce(kBenchSid, 5, 0xFFFF, s, 5);
  decide_roce(kBenchSid, 5, 0x8001, s, 5);
  decide_roce(kBenchSid + 1, 5, 0x8001, s, 5);
  EXPECT_EQ(s.match_cache->size(), 5u);
}

TEST(MatchCache, APolicyReloadEmptiesItAndNoStaleLevelIsReturned) {
  CmSettings s = cached_settings(3);
  auto before = decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->sl, 3);
  EXPECT_EQ(before->traffic_class, 104);
  // A reload: a new compiled policy in the same settings, which keep their cache.
  s.policy = policy_with_bench_sl(2);
  auto after = decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->sl, 2);
  EXPECT_EQ(after->traffic_class, 136);
  EXPECT_EQ(s.match_cache->size(), 1u);
  // And back: the first policy's instance is a new generation again, matched afresh.
  s.policy = policy_with_bench_sl(3);
  EXPECT_EQ(decide_roce(kBenchSid, std::nullopt, 0xFFFF, s)->sl, 3);
}

TEST(MatchCache, AnEntryFromTheOldPolicyIsNotFoundWithTheNewOne) {
  MatchCache cache;
  auto old_policy = policy_with_bench_sl(3);
  auto new_policy = policy_with_bench_sl(3);  // the same text, another generation
  const MatchKey key{kBenchSid, std::nullopt, 0xFFFF, std::nullopt};
  cache.insert(old_policy, key, CmDecision{});
  EXPECT_TRUE(cache.find(old_policy, key).hit);
  EXPECT_FALSE(cache.find(new_policy, key).hit);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(MatchCache, TheTrafficClassIsTheSettingsOwnOnAHit) {
  CmSettings a = cached_settings(3);
  CmSettings b = a;  // shares the cache
  b.sl2tclass[3] = 40;
  EXPECT_EQ(decide_roce(kBenchSid, std::nullopt, 0xFFFF, a)->traffic_class, 104);
  EXPECT_EQ(decide_roce(kBenchSid, std::nullopt, 0xFFFF, b)->traffic_class, 40);
}

TEST(MatchCache, StaysBounded) {
  CmSettings s = cached_settings(3);
  for (uint64_t port = 0; port < 3 * MatchCache::kCapacity; ++port)
    decide_roce(service_id(kPsTcp, static_cast<uint16_t>(port)), std::nullopt, 0xFFFF, s);
  EXPECT_LE(s.match_cache->size(), MatchCache::kCapacity);
  EXPECT_GT(s.match_cache->size(), 0u);
}

TEST(MatchCache, EveryKeyFindsItsOwnEntryThroughRefills) {
  // Keys that differ in one field each (collisions in the slots' probe runs), past the capacity
  // twice: each look-up after an insert gets that key's decision, never a neighbour's.
  MatchCache cache;
  auto policy = policy_with_bench_sl(3);
  for (uint16_t n = 0; n < 2 * MatchCache::kCapacity + 7; ++n) {
    const MatchKey key{kBenchSid + (n % 5), uint16_t(n / 5), uint16_t(0x8000 | (n % 3)),
                       n % 2 ? std::optional<uint8_t>(uint8_t(n)) : std::nullopt};
    CmDecision d;
    d.service_id = key.service_id;
    d.sl = static_cast<uint8_t>(n % 16);
    d.rule = n;
    cache.insert(policy, key, d);
    auto found = cache.find(policy, key);
    ASSERT_TRUE(found.hit) << n;
    ASSERT_TRUE(found.decision) << n;
    EXPECT_EQ(found.decision->rule, size_t{n});
    EXPECT_LE(cache.size(), MatchCache::kCapacity);
  }
  // A key with no level is a hit with no decision; an absent class differs from class 0.
  const MatchKey none{1, std::nullopt, 0xFFFF, std::nullopt};
  cache.insert(policy, none, std::nullopt);
  EXPECT_TRUE(cache.find(policy, none).hit);
  EXPECT_FALSE(cache.find(policy, none).decision);
  EXPECT_FALSE(cache.find(policy, MatchKey{1, uint16_t{0}, 0xFFFF, std::nullopt}).hit);
}

TEST(MatchCache, ALevelNameOutlivesItsPolicy) {
  // Decisions keep a view of the level's name, interned for the process: still readable once the
  // policy that gave it (and the cache's hold on it) is gone.
  std::optional<CmDecision> d;
  {
    CmSettings s = cached_settings(3);
    d = decide_roce(kBenchSid, std::nullopt, 0xFFFF, s);
  }
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "BENCH");
  EXPECT_EQ(d->level_hash, cm_tag_level_hash("BENCH"));
  // One copy per distinct name.
  EXPECT_EQ(level_name(std::string("BENCH")).data(), d->level.data());
  EXPECT_NE(level_name("BENCH2").data(), d->level.data());
}

}  // namespace
}  // namespace rdmaqos::rdmacm
