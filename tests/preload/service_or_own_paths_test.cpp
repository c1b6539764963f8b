// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's SA questions go to the node's path service while it runs and to the process's
// own SA client when it does not: absent from the start, or gone in the middle of a run (the
// question that found it gone is asked again of the own client, not failed); what the service
// answers, errors included, is final; a service that comes back is used again after the
// back-off; a service too busy to take the question before its deadline fails it as busy
// (never the own client's, which could only time out and mark the SA down).
#include "service_or_own_paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "fake_path_service.h"

namespace rdmaqos::preload {
namespace {

using namespace std::chrono_literals;
using sa::path_service::Answer;
using sa::path_service::Question;

// Stands for the process's own SA client: answers SL 9, counting its questions.
class OwnClient final : public sa::PortPaths {
 public:
  rdmaqos::Result<bool> qos_supported(sa::Deadline) override { return false; }
  rdmaqos::Result<bool> multipath_supported(sa::Deadline) override { return false; }
  rdmaqos::Result<std::vector<sa::PathRecord>> path_records(const sa::PathQuery& q,
                                                            sa::Deadline) override {
    ++asked;
    sa::PathRecord p = q.record;
    p.sl = 9;
    return std::vector<sa::PathRecord>{p};
  }
  rdmaqos::Result<std::vector<sa::PathRecord>> multipath_records(const sa::PathQuery& q,
                                                                 sa::Deadline d) override {
    return path_records(q, d);
  }
  std::atomic<int> asked{0};
};

// The service answers SL 4, or the error it is given.
std::optional<Answer> service_answer(const Question& q) {
  Answer a;
  a.op = q.op;
  a.id = q.id;
  if (q.op == sa::path_service::Op::kClassPortInfo) {
    sa::ClassPortInfo info;
    info.capability_mask2 = sa::cap2::kQosSupported;
    a.class_port_info = info;
    return a;
  }
  sa::PathRecord p = q.query.record;
  p.sl = 4;
  a.paths = std::vector<sa::PathRecord>{p};
  return a;
}

struct Fixture : ::testing::Test {
  std::string path = ::testing::TempDir() + "/paths-module-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sock";
  std::shared_ptr<OwnClient> own = std::make_shared<OwnClient>();
  std::vector<std::string> notes;
  std::unique_ptr<ServiceOrOwnPaths> paths() {
    sa::PathServiceOptions o;
    o.socket_path = path;
    o.device = "mlx5_0";
    o.port = 1;
    return std::make_unique<ServiceOrOwnPaths>(
        o, [this] { return std::static_pointer_cast<sa::PortPaths>(own); },
        [this](const std::string& key, const std::string&) { notes.push_back(key); });
  }
};

uint8_t sl_of(const rdmaqos::Result<std::vector<sa::PathRecord>>& r) {
  return r && !r->empty() ? (*r)[0].sl : 0xff;
}

using ServiceOrOwnPathsTest = Fixture;

TEST_F(ServiceOrOwnPathsTest, RunningServiceAnswersAndTheOwnClientIsNotAsked) {
  sa::testing::FakePathService service(path, service_answer);
  auto p = paths();
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 4);
  auto qos = p->qos_supported(sa::deadline_after(2s));
  ASSERT_TRUE(qos);
  EXPECT_TRUE(*qos);
  EXPECT_EQ(own->asked, 0);
  EXPECT_TRUE(notes.empty());
}

TEST_F(ServiceOrOwnPathsTest, AbsentServiceLeavesTheQuestionsToTheOwnClientSaidOnce) {
  auto p = paths();
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 9);
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 9);
  EXPECT_EQ(own->asked, 2);
  ASSERT_EQ(notes.size(), 1u);  // the second question is inside the back-off: no new attempt
  EXPECT_TRUE(notes[0].starts_with("path_service_absent:"));
}

TEST_F(ServiceOrOwnPathsTest, ServiceGoneMidRunHandsTheSameQuestionToTheOwnClient) {
  sa::testing::FakePathService service(path, service_answer);
  auto p = paths();
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 4);
  service.stop();
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 9);
  EXPECT_EQ(own->asked, 1);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(notes[0].starts_with("path_service_lost:"));
}

TEST_F(ServiceOrOwnPathsTest, ServiceErrorsAreFinalNotRetriedOnTheOwnClient) {
  sa::testing::FakePathService service(path, [](const Question& q) {
    Answer a;
    a.op = q.op;
    a.id = q.id;
    a.paths = rdmaqos::make_error(rdmaqos::ErrorCode::kTimeout, "the SA did not answer lsd");
    return std::optional<Answer>(a);
  });
  auto p = paths();
  auto r = p->path_records({}, sa::deadline_after(2s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, rdmaqos::ErrorCode::kTimeout);
  EXPECT_EQ(own->asked, 0);
}

TEST_F(ServiceOrOwnPathsTest, ServiceThatComesBackIsUsedAgainAfterTheBackOff) {
  auto p = paths();
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 9);
  sa::testing::FakePathService service(path, service_answer);
  std::this_thread::sleep_for(1100ms);  // the first back-off is 1 s
  EXPECT_EQ(sl_of(p->path_records({}, sa::deadline_after(2s))), 4);
}

TEST_F(ServiceOrOwnPathsTest, ServiceWithAFullBacklogIsBusyUntilTheDeadlineThenUsed) {
  sa::testing::FullBacklog service(path);
  auto queued = sa::connect_path_service(path);  // fills the backlog
  ASSERT_TRUE(queued) << queued.error().message;
  auto p = paths();
  auto r = p->path_records({}, sa::deadline_after(80ms));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, rdmaqos::ErrorCode::kBusy) << r.error().message;
  EXPECT_EQ(own->asked, 0);
  EXPECT_TRUE(notes.empty());  // the service is there: nothing to say, no back-off
  ::close(*queued);
}

}  // namespace
}  // namespace rdmaqos::preload
