// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node path service's client against a stand-in service: the service's answer and its
// errors come back as they were sent, an absent or vanished service says so (kNotFound, the
// module's cue to ask the SA itself), a silent one costs no more than the caller's deadline and
// does not poison the next question, threads ask at the same time, and a service with no room
// for a question before its deadline is busy (kBusy), which says nothing of the SA.
#include "rdma-qos/sa-client/path_service_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fake_path_service.h"

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using path_service::Answer;
using path_service::Op;
using path_service::Question;

std::string socket_path(const char* name) {
  return ::testing::TempDir() + "/paths-" + name + "-" + std::to_string(::getpid()) + ".sock";
}

PathServiceOptions options_for(const std::string& path) {
  PathServiceOptions o;
  o.socket_path = path;
  o.device = "mlx5_0";
  o.port = 1;
  return o;
}

// Answers a PathRecord question with its own record, SL 4 and the question's port as SLID.
std::optional<Answer> echo(const Question& q) {
  Answer a;
  a.op = q.op;
  a.id = q.id;
  if (q.op == Op::kClassPortInfo) {
    ClassPortInfo info;
    info.capability_mask2 = cap2::kQosSupported;
    a.class_port_info = info;
    return a;
  }
  PathRecord p = q.query.record;
  p.sl = 4;
  p.slid = q.port;
  a.paths = std::vector<PathRecord>{p};
  return a;
}

PathQuery query_for(uint64_t service_id) {
  PathQuery q;
  q.record.service_id = service_id;
  q.record.dlid = 9;
  q.comp_mask = pr_mask::kServiceId | pr_mask::kDlid;
  return q;
}

TEST(PathServiceClient, AbsentServiceIsNotFound) {
  auto c = PathServiceClient::connect(options_for(socket_path("absent")));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kNotFound);
  EXPECT_NE(c.error().message.find("no node path service at"), std::string::npos);
}

TEST(PathServiceClient, AnswersComeBackAsTheServiceSentThem) {
  testing::FakePathService service(socket_path("answers"), echo);
  auto c = PathServiceClient::connect(options_for(service.path()));
  ASSERT_TRUE(c) << c.error().message;
  auto paths = (*c)->path_records(query_for(0x10), deadline_after(2000ms));
  ASSERT_TRUE(paths) << paths.error().message;
  ASSERT_EQ(paths->size(), 1u);
  EXPECT_EQ((*paths)[0].sl, 4);
  EXPECT_EQ((*paths)[0].service_id, 0x10u);
  EXPECT_EQ((*paths)[0].slid, 1);
  auto qos = (*c)->qos_supported(deadline_after(2000ms));
  ASSERT_TRUE(qos);
  EXPECT_TRUE(*qos);
  auto mpr = (*c)->multipath_supported(std::nullopt);
  ASSERT_TRUE(mpr);
  EXPECT_FALSE(*mpr);
}

TEST(PathServiceClient, ServiceErrorsKeepTheirCode) {
  testing::FakePathService service(socket_path("errors"), [](const Question& q) {
    Answer a;
    a.op = q.op;
    a.id = q.id;
    a.paths = make_error(ErrorCode::kMadStatus, "ERR_NO_RECORDS", 0x0300);
    return std::optional<Answer>(a);
  });
  auto c = PathServiceClient::connect(options_for(service.path()));
  ASSERT_TRUE(c);
  auto paths = (*c)->multipath_records(query_for(1), deadline_after(2000ms));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kMadStatus);
  EXPECT_EQ(paths.error().mad_status, 0x0300);
}

TEST(PathServiceClient, SilentServiceCostsTheDeadlineAndTheNextQuestionGetsItsOwnAnswer) {
  std::atomic<bool> silent{true};
  testing::FakePathService service(
      socket_path("silent"), [&](const Question& q) { return silent ? std::nullopt : echo(q); });
  auto c = PathServiceClient::connect(options_for(service.path()));
  ASSERT_TRUE(c);
  auto start = Clock::now();
  auto paths = (*c)->path_records(query_for(1), deadline_after(150ms));
  auto took = Clock::now() - start;
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTimeout);
  EXPECT_GE(took, 140ms);
  EXPECT_LT(took, 2s);
  silent = false;
  // The timed-out connection is not reused: a late answer there would be taken for this one's.
  auto next = (*c)->path_records(query_for(2), deadline_after(2000ms));
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ((*next)[0].service_id, 2u);
}

TEST(PathServiceClient, VanishedServiceIsNotFound) {
  testing::FakePathService service(socket_path("vanished"), echo);
  auto c = PathServiceClient::connect(options_for(service.path()));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->path_records(query_for(1), deadline_after(2000ms)));
  service.stop();
  auto paths = (*c)->path_records(query_for(1), deadline_after(2000ms));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kNotFound) << paths.error().message;
}

TEST(PathServiceClient, ThreadsAskAtTheSameTimeAndEachGetsItsOwnAnswer) {
  testing::FakePathService service(socket_path("threads"), echo);
  auto o = options_for(service.path());
  o.connections = 3;
  auto c = PathServiceClient::connect(o);
  ASSERT_TRUE(c);
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        uint64_t sid = static_cast<uint64_t>(t * 100 + i);
        auto p = (*c)->path_records(query_for(sid), deadline_after(5000ms));
        if (p && p->size() == 1 && (*p)[0].service_id == sid) ++right;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(right, 160);
  EXPECT_EQ(service.questions(), 160);
}

TEST(PathServiceClient, FullBacklogIsBusyAndWaitedForOnlyUntilTheDeadline) {
  testing::FullBacklog service(socket_path("backlog"));
  auto first = connect_path_service(service.path());  // the one the backlog holds
  ASSERT_TRUE(first) << first.error().message;
  auto at_once = connect_path_service(service.path());
  ASSERT_FALSE(at_once);
  EXPECT_EQ(at_once.error().code, ErrorCode::kBusy) << at_once.error().message;
  auto start = Clock::now();
  auto waited = connect_path_service(service.path(), Clock::now() + 60ms);
  auto took = Clock::now() - start;
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code, ErrorCode::kBusy);
  EXPECT_GE(took, 55ms);
  EXPECT_LT(took, 2s);
  // Room made while a connect waits: it gets in.
  std::thread taker([&] {
    std::this_thread::sleep_for(30ms);
    service.accept_one();
  });
  auto in = connect_path_service(service.path(), Clock::now() + 5s);
  taker.join();
  ASSERT_TRUE(in) << in.error().message;
  ::close(*first);
  ::close(*in);
}

TEST(PathServiceClient, EveryConnectionBusyUntilTheDeadlineIsBusyNotATimeout) {
  testing::FakePathService service(socket_path("pool"), [](const Question&) {
    return std::optional<Answer>{};  // silent: the one connection stays taken
  });
  auto o = options_for(service.path());
  o.connections = 1;
  auto c = PathServiceClient::connect(o);
  ASSERT_TRUE(c);
  std::thread holder([&] {
    auto r = (*c)->path_records(query_for(1), deadline_after(400ms));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  });
  std::this_thread::sleep_for(50ms);
  auto second = (*c)->path_records(query_for(2), deadline_after(100ms));
  holder.join();
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kBusy) << second.error().message;
}

}  // namespace
}  // namespace rdmaqos::sa
