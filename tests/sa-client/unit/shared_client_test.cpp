// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client for many threads: each call bounded by its caller's deadline, the wait for an
// idle client included, every thread getting the answer to its own query, and threads' queries
// travelling at the same time.
#include "rdma-qos/sa-client/shared_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fake_transport.h"

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// An SA that never answers, with retries that would take 2 s without a deadline.
std::unique_ptr<SharedClient> silent_sa() {
  auto t = std::make_unique<testing::FakeTransport>(
      [](const SaMad&) { return std::vector<ReceivedMad>{}; });
  ClientOptions o;
  o.timeout = 200ms;
  o.retries = 10;
  o.backoff = 1ms;
  return std::make_unique<SharedClient>(std::make_unique<Client>(std::move(t), o));
}

// An SA that answers every PathRecord query with the query itself and SL 3, each answer
// `round_trip` after its query.
std::unique_ptr<Client> echoing_client(std::chrono::milliseconds round_trip = 0ms) {
  auto t = std::make_unique<testing::FakeTransport>([round_trip](const SaMad& r) {
    std::this_thread::sleep_for(round_trip);
    SaMad m = testing::response_to(r, method::kGetTableResp);
    m.sa.attr_offset = 8;
    PathRecord p = *decode_path_record(r.data);
    p.sl = 3;
    auto b = encode_path_record(p);
    m.data.assign(b->begin(), b->end());
    return std::vector<ReceivedMad>{testing::received(m)};
  });
  ClientOptions o;
  o.timeout = 1000ms;
  return std::make_unique<Client>(std::move(t), o);
}

std::unique_ptr<SharedClient> echoing_sa() {
  return std::make_unique<SharedClient>(echoing_client());
}

PathQuery query_for(uint64_t service_id) {
  PathQuery q;
  q.record.service_id = service_id;
  q.record.dlid = 3;
  q.comp_mask = pr_mask::kServiceId | pr_mask::kDlid;
  return q;
}

TEST(SharedClient, TheCallersDeadlineEndsAQueryToASilentSa) {
  auto c = silent_sa();
  auto start = Clock::now();
  auto r = c->path_records(query_for(1), deadline_after(30ms));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_LT(Clock::now() - start, 200ms);  // not even one full attempt
}

TEST(SharedClient, AWaiterForABusyPortGivesUpAtItsOwnDeadline) {
  auto c = silent_sa();
  std::atomic<bool> holding{false};
  std::thread first([&] {
    holding = true;
    c->path_records(query_for(1), deadline_after(400ms)).ignore_error();
  });
  while (!holding) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);  // the first thread holds the port's lock by now
  auto start = Clock::now();
  auto r = c->path_records(query_for(2), deadline_after(30ms));
  auto took = Clock::now() - start;
  first.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_NE(r.error().message.find("busy"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 300ms);  // did not wait for the first thread's query to end
}

TEST(SharedClient, ManyThreadsEachGetTheAnswerToTheirOwnQuery) {
  auto c = echoing_sa();
  constexpr int kThreads = 8, kQueries = 40;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kQueries; ++i) {
        uint64_t sid = 0x1000000 + static_cast<uint64_t>(t * kQueries + i);
        auto r = c->path_records(query_for(sid), deadline_after(2000ms));
        if (!r || r->size() != 1)
          ++failed;
        else if ((*r)[0].service_id != sid || (*r)[0].sl != 3)
          ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(wrong, 0);
}

// Four threads ask at once an SA that takes 200 ms per answer: with four clients on the port
// the four round trips overlap (one after another would take 800 ms).
TEST(SharedClient, ThreadsQueriesTravelAtTheSameTime) {
  std::atomic<int> opened{1};
  SharedClient c(
      echoing_client(200ms),
      [&]() -> Result<std::unique_ptr<Client>> {
        ++opened;
        return echoing_client(200ms);
      },
      4);
  std::atomic<int> failed{0};
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      if (!c.path_records(query_for(0x2000 + static_cast<uint64_t>(t)), deadline_after(3000ms)))
        ++failed;
    });
  for (auto& t : threads) t.join();
  auto took = Clock::now() - start;
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(opened, 4);
  EXPECT_LT(took, 600ms);
}

// No more clients than allowed: the fifth of five threads waits for an idle one.
TEST(SharedClient, OpensNoMoreClientsThanAllowed) {
  std::atomic<int> opened{1};
  SharedClient c(
      echoing_client(100ms),
      [&]() -> Result<std::unique_ptr<Client>> {
        ++opened;
        return echoing_client(100ms);
      },
      2);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 5; ++t)
    threads.emplace_back([&, t] {
      if (!c.path_records(query_for(0x3000 + static_cast<uint64_t>(t)), deadline_after(3000ms)))
        ++failed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(opened, 2);
}

// The pool's clients read ClassPortInfo once between them: a second client opened while the
// first is busy takes the first one's answer.
TEST(SharedClient, ThePoolReadsClassPortInfoOnce) {
  std::atomic<int> cpi_queries{0};
  auto client = [&] {
    auto t = std::make_unique<testing::FakeTransport>([&](const SaMad& r) {
      if (r.mad.attr_id != attr::kClassPortInfo) std::this_thread::sleep_for(150ms);
      SaMad m = testing::response_to(r, method::kGetResp);
      if (r.mad.attr_id == attr::kClassPortInfo) {
        ++cpi_queries;
        ClassPortInfo info;
        info.capability_mask2 = cap2::kQosSupported;
        m.data = *encode_class_port_info(info);
      }
      return std::vector<ReceivedMad>{testing::received(m)};
    });
    return std::make_unique<Client>(std::move(t), ClientOptions{});
  };
  SharedClient c(
      client(), [&]() -> Result<std::unique_ptr<Client>> { return client(); }, 2);
  auto first = c.qos_supported(deadline_after(2000ms));
  ASSERT_TRUE(first) << first.error().message;
  // One thread holds the first client with a slow query; the second opens another client.
  std::thread slow(
      [&] { c.path_records(query_for(0x4000), deadline_after(2000ms)).ignore_error(); });
  std::this_thread::sleep_for(30ms);
  auto second = c.qos_supported(deadline_after(2000ms));
  slow.join();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(*second);
  EXPECT_EQ(cpi_queries, 1);
}

// A port that refuses another agent: the queries share the clients already open.
TEST(SharedClient, AFailedOpenFallsBackToTheOpenClients) {
  SharedClient c(
      echoing_client(50ms),
      []() -> Result<std::unique_ptr<Client>> {
        return make_error(ErrorCode::kTransport, "no more agents");
      },
      4);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      if (!c.path_records(query_for(0x4000 + static_cast<uint64_t>(t)), deadline_after(3000ms)))
        ++failed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed, 0);
}

TEST(SharedClient, WithoutADeadlineTheClientsOwnRetriesApply) {
  auto c = echoing_sa();
  auto r = c->path_records(query_for(7), std::nullopt);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].service_id, 7u);
}

TEST(SharedClient, NoBudgetMeansNoDeadline) {
  EXPECT_EQ(deadline_after(0ms), std::nullopt);
  EXPECT_EQ(deadline_after(-5ms), std::nullopt);
  EXPECT_TRUE(deadline_after(5ms).has_value());
}

}  // namespace
}  // namespace rdmaqos::sa
