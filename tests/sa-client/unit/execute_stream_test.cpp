// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Client::execute_stream: requests pulled from a source join the window while others wait,
// and each response is handed over as soon as it completes, in pull-order indices.
#include <gtest/gtest.h>

#include "fake_transport.h"
#include "rdma-qos/sa-client/client.h"

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;
using testing::FakeTransport;
using testing::received;
using testing::response_to;

SaRequest path_get(uint16_t dlid) {
  PathQuery q;
  q.get_table = false;
  q.record.dlid = dlid;
  q.comp_mask = pr_mask::kDlid;
  return make_path_request(q).value();
}

// Answers every Get at once, except for DLID 99, which the SA never answers.
std::vector<ReceivedMad> answer_all_but_99(const SaMad& request) {
  if (request.data[41] == 99) return {};
  SaMad m = response_to(request, method::kGetResp);
  m.data.assign(request.data.begin(), request.data.end());
  return {received(m)};
}

// One attempt per request, of `timeout`.
ClientOptions one_attempt_of(std::chrono::milliseconds timeout) {
  ClientOptions o;
  o.timeout = timeout;
  o.retries = 0;
  return o;
}

TEST(ExecuteStream, LaterRequestsCompleteWhileAnEarlierOneWaits) {
  Client c(std::make_unique<FakeTransport>(answer_all_but_99), one_attempt_of(200ms));
  // The source has the silent request first; two more arrive only after it is in flight.
  int asked = 0;
  std::vector<std::pair<size_t, bool>> order;  // (index, ok) in completion order
  c.execute_stream(
      [&]() -> std::optional<SaRequest> {
        ++asked;
        if (asked == 1) return path_get(99);
        if (asked == 3) return path_get(3);
        if (asked == 4) return path_get(4);
        return std::nullopt;  // asked == 2: nothing new yet; later: done
      },
      [&](size_t i, Result<SaMad> r) { order.emplace_back(i, r.ok()); }, 1ms);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], std::make_pair(size_t{1}, true));
  EXPECT_EQ(order[1], std::make_pair(size_t{2}, true));
  EXPECT_EQ(order[2], std::make_pair(size_t{0}, false));  // the silent one times out last
}

// Each request carries its own deadline in one stream: the one whose asker's time is short gives
// up at it, the other keeps its attempts (the client-wide deadline is not set).
TEST(ExecuteStream, EachRequestGivesUpAtItsOwnDeadline) {
  Client c(std::make_unique<FakeTransport>(answer_all_but_99), one_attempt_of(400ms));
  std::vector<SaRequest> requests = {path_get(99), path_get(99), path_get(3)};
  requests[1].deadline = std::chrono::steady_clock::now() + 20ms;
  size_t next = 0;
  std::vector<std::pair<size_t, std::string>> order;  // (index, error message) by completion
  c.execute_stream(
      [&]() -> std::optional<SaRequest> {
        if (next == requests.size()) return std::nullopt;
        return requests[next++];
      },
      [&](size_t i, Result<SaMad> r) {
        order.emplace_back(i, r ? std::string() : r.error().message);
      },
      1ms);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].first, 2u);  // answered
  EXPECT_EQ(order[1].first, 1u);  // its own deadline
  EXPECT_NE(order[1].second.find("within the caller's deadline"), std::string::npos)
      << order[1].second;
  EXPECT_EQ(order[2].first, 0u);  // its attempt's timeout
  EXPECT_NE(order[2].second.find("after 1 attempt(s)"), std::string::npos) << order[2].second;
}

TEST(ExecuteStream, ReturnsAtOnceWithAnEmptySource) {
  Client c(std::make_unique<FakeTransport>(answer_all_but_99), ClientOptions{});
  int calls = 0;
  c.execute_stream([] { return std::optional<SaRequest>{}; },
                   [&](size_t, Result<SaMad>) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace rdmaqos::sa
