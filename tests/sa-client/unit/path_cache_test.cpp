// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Path cache: keyed by the whole query, TTL, size bound, SM-generation invalidation, shared
// across threads, and used by the client so a hit sends nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_transport.h"
#include "rdma-qos/sa-client/path_cache.h"

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;
using Clock = PathCache::Clock;

PathQuery query(uint16_t dlid, uint64_t service_id = 0) {
  PathQuery q;
  q.record.dlid = dlid;
  q.comp_mask = pr_mask::kDlid;
  if (service_id) {
    q.record.service_id = service_id;
    q.comp_mask |= pr_mask::kServiceId;
  }
  return q;
}

std::vector<PathRecord> answer(uint8_t sl) {
  PathRecord r;
  r.sl = sl;
  return {r};
}

TEST(PathCache, HitReturnsTheStoredAnswer) {
  PathCache c;
  auto t0 = Clock::now();
  c.insert(query(3), answer(4), 0, t0);
  auto hit = c.lookup(query(3), 0, t0);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->at(0).sl, 4);
}

TEST(PathCache, EveryQueryFieldIsPartOfTheKey) {
  PathCache c;
  auto t0 = Clock::now();
  c.insert(query(3, 0x1060CBC), answer(3), 0, t0);
  EXPECT_FALSE(c.lookup(query(3, 0x1060CBD), 0, t0));  // Service ID
  EXPECT_FALSE(c.lookup(query(3), 0, t0));             // mask without Service ID
  PathQuery other_class = query(3, 0x1060CBC);
  other_class.record.qos_class = 7;
  other_class.comp_mask |= pr_mask::kQosClass;
  EXPECT_FALSE(c.lookup(other_class, 0, t0));
  PathQuery get = query(3, 0x1060CBC);
  get.get_table = false;
  EXPECT_FALSE(c.lookup(get, 0, t0));  // method
  EXPECT_TRUE(c.lookup(query(3, 0x1060CBC), 0, t0));
}

// The client keys its cache by the request it encodes anyway: the same key as the query's.
TEST(PathCache, AnEncodedRequestHasItsQuerysKey) {
  PathQuery q = query(3, 0x1060CBC);
  q.record.qos_class = 7;
  q.comp_mask |= pr_mask::kQosClass;
  auto request = make_path_request(q);
  ASSERT_TRUE(request);
  auto from_query = PathCache::key_of(q);
  ASSERT_TRUE(from_query);
  EXPECT_EQ(PathCache::key_of(*request), *from_query);
  PathCache c;
  auto t0 = Clock::now();
  c.insert(PathCache::key_of(*request), answer(5), 0, t0);
  auto hit = c.lookup(q, 0, t0);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->at(0).sl, 5);
}

TEST(PathCache, EntriesExpireAfterTheTtl) {
  PathCacheOptions o;
  o.ttl = 10s;
  PathCache c(o);
  auto t0 = Clock::now();
  c.insert(query(3), answer(1), 0, t0);
  EXPECT_TRUE(c.lookup(query(3), 0, t0 + 9s));
  EXPECT_FALSE(c.lookup(query(3), 0, t0 + 10s));
  EXPECT_EQ(c.size(), 0u);
}

TEST(PathCache, SmChangeInvalidates) {
  PathCache c;
  auto t0 = Clock::now();
  c.insert(query(3), answer(1), 0, t0);
  EXPECT_FALSE(c.lookup(query(3), 1, t0));
}

TEST(PathCache, SizeIsBoundedDroppingTheLeastRecentlyUsed) {
  PathCacheOptions o;
  o.capacity = 2;
  o.shards = 1;
  PathCache c(o);
  auto t0 = Clock::now();
  c.insert(query(1), answer(1), 0, t0);
  c.insert(query(2), answer(2), 0, t0);
  ASSERT_TRUE(c.lookup(query(1), 0, t0));  // 1 is now the most recent
  c.insert(query(3), answer(3), 0, t0);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_TRUE(c.lookup(query(1), 0, t0));
  EXPECT_FALSE(c.lookup(query(2), 0, t0));
  EXPECT_TRUE(c.lookup(query(3), 0, t0));
}

TEST(PathCache, ManyThreadsShareIt) {
  PathCache c;
  auto t0 = Clock::now();
  for (uint16_t i = 0; i < 64; ++i) c.insert(query(i), answer(static_cast<uint8_t>(i % 16)), 0, t0);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int n = 0; n < 2000; ++n) {
        uint16_t i = static_cast<uint16_t>(n % 64);
        auto hit = c.lookup(query(i), 0, t0);
        if (!hit || hit->at(0).sl != i % 16) ++wrong;
        c.insert(query(i), answer(static_cast<uint8_t>(i % 16)), 0, t0);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(PathCache, ClientAnswersHitsWithoutSending) {
  auto t = std::make_unique<testing::FakeTransport>([](const SaMad& r) {
    SaMad m = testing::response_to(r, method::kGetTableResp);
    m.sa.attr_offset = 8;
    PathRecord p;
    p.sl = 6;
    auto b = encode_path_record(p);
    m.data.assign(b->begin(), b->end());
    return std::vector<ReceivedMad>{testing::received(m)};
  });
  auto* fake = t.get();
  ClientOptions o;
  o.timeout = 5ms;
  Client client(std::move(t), o);
  client.set_cache(std::make_shared<PathCache>());
  auto first = client.path_records(query(3));
  auto second = client.path_records(query(3));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->at(0).sl, 6);
  EXPECT_EQ(fake->sent.size(), 1u);
}

}  // namespace
}  // namespace rdmaqos::sa
