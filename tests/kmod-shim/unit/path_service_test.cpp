// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node path service against a fake SA, asked through sa::PathServiceClient (the module's
// client) or raw questions: identical questions in flight are asked of the SA once, answers
// are cached, SA errors come back with their code, a malformed question or a client that never
// reads harms nobody else, and every answer comes within the asker's budget.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "held_replies.h"
#include "rdma-qos/kmod-shim/path_service.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/path_service_client.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace wire = sa::path_service;

constexpr uint8_t kSilent = 0x99;     // a DGID ending here: the SA never answers
constexpr uint8_t kNoRecords = 0x98;  // ... answers MAD status SA_NO_RECORDS

// What the fake SA saw, shared by every transport (umad agent) the service opens.
struct FakeSa {
  std::atomic<int> path_requests{0};
  std::atomic<int> class_port_info_requests{0};
  std::chrono::milliseconds delay{20};
  std::atomic<int> outstanding{0};  // sent and not yet received
  std::atomic<int> most_outstanding{0};
};

// Answers a PathRecord query with its own record, SL = the Service-ID's low 4 bits and LIDs
// 2 -> 3, after the SA's delay; ClassPortInfo with QoS and MultiPathRecord supported.
class FakeTransport final : public sa::Transport {
 public:
  explicit FakeTransport(std::shared_ptr<FakeSa> sa) : sa_(std::move(sa)) {
    port_.ca = "fake0";
    port_.port = 1;
    port_.lid = 2;
    port_.sm_lid = 1;
  }
  Result<Ok> send(std::span<const uint8_t> bytes, uint16_t, uint8_t,
                  std::chrono::milliseconds) override {
    auto mad = sa::decode_sa_mad(bytes);
    if (!mad) return mad.error();
    sa::SaMad reply;
    reply.mad.method = sa::method::kGetResp;
    reply.mad.attr_id = mad->mad.attr_id;
    reply.mad.tid = mad->mad.tid;
    if (mad->mad.attr_id == sa::attr::kClassPortInfo) {
      ++sa_->class_port_info_requests;
      sa::ClassPortInfo cpi;
      cpi.base_version = 1;
      cpi.class_version = 2;
      cpi.capability_mask = sa::cap::kMultiPathSupported;
      cpi.capability_mask2 = sa::cap2::kQosSupported;
      auto wire = sa::encode_class_port_info(cpi);
      reply.data = *wire;
    } else {
      ++sa_->path_requests;
      auto query = sa::decode_path_record(mad->data);
      if (!query) return query.error();
      if (query->dgid[15] == kSilent) return Ok{};
      if (query->dgid[15] == kNoRecords) {
        reply.mad.status = uint16_t{sa::status::kNoRecords} << 8;
      } else {
        sa::PathRecord answer = *query;
        answer.sl = static_cast<uint8_t>(query->service_id & 0xF);
        answer.slid = 2;
        answer.dlid = 3;
        auto wire = sa::encode_path_record(answer);
        reply.data.assign(wire->begin(), wire->end());
      }
    }
    held_.hold(sa::encode_sa_mad(reply), sa_->delay);
    const int now = ++sa_->outstanding;
    for (int most = sa_->most_outstanding; now > most;)
      sa_->most_outstanding.compare_exchange_weak(most, now);
    return Ok{};
  }
  Result<std::optional<sa::ReceivedMad>> receive(std::chrono::milliseconds timeout) override {
    auto r = held_.receive(timeout);
    if (r && *r) --sa_->outstanding;
    return r;
  }
  const sa::PortAttributes& port() const override { return port_; }
  Result<sa::PortAttributes> refresh_port() override { return port_; }

 private:
  std::shared_ptr<FakeSa> sa_;
  sa::PortAttributes port_;
  testing::HeldReplies held_;
};

sa::PathQuery query_to(uint8_t dgid_last, uint64_t service_id) {
  sa::PathQuery q;
  q.record.sgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300a00011ULL);
  q.record.dgid = sa::make_gid(0xfe80000000000000ULL, 0x0002c90300a00000ULL | dgid_last);
  q.record.service_id = service_id;
  q.comp_mask = sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kServiceId;
  q.get_table = false;
  return q;
}

// A umad port whose every send fails (a device that went away after it was opened).
class BrokenTransport final : public sa::Transport {
 public:
  explicit BrokenTransport(std::shared_ptr<std::atomic<int>> opened) {
    ++*opened;
    port_.ca = "fake0";
    port_.port = 1;
    port_.lid = 2;
    port_.sm_lid = 1;
  }
  Result<Ok> send(std::span<const uint8_t>, uint16_t, uint8_t, std::chrono::milliseconds) override {
    return make_error(ErrorCode::kTransport, "umad_send: No such device");
  }
  Result<std::optional<sa::ReceivedMad>> receive(std::chrono::milliseconds timeout) override {
    std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(10)));
    return std::optional<sa::ReceivedMad>{};
  }
  const sa::PortAttributes& port() const override { return port_; }
  Result<sa::PortAttributes> refresh_port() override { return port_; }

 private:
  sa::PortAttributes port_;
};

class PathServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdma-qos-paths-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_path_ = dir_ + "/run/paths.sock";  // its directory is made by bind_path_socket
    options_.sa.timeout = 1000ms;
    options_.sa.retries = 0;
    options_.counters = counters_;
    options_.open_transport =
        [sa = sa_](const sa::UmadOptions&) -> Result<std::unique_ptr<sa::Transport>> {
      return std::unique_ptr<sa::Transport>(std::make_unique<FakeTransport>(sa));
    };
  }
  void start() {
    auto fd = bind_path_socket(socket_path_);
    ASSERT_TRUE(fd) << fd.error().message;
    listen_fd_ = *fd;
    auto s = PathService::create(listen_fd_, options_, [this](Priority, const std::string& m) {
      std::lock_guard lock(log_mutex_);
      log_.push_back(m);
    });
    ASSERT_TRUE(s) << s.error().message;
    service_ = std::move(*s);
    thread_ = std::thread([this] { status_ = service_->run(); });
  }
  void TearDown() override {
    if (service_) service_->stop();
    if (thread_.joinable()) thread_.join();
    EXPECT_EQ(status_, 0);
    if (listen_fd_ >= 0) close(listen_fd_);
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<sa::PathServiceClient> client() {
    sa::PathServiceOptions o;
    o.socket_path = socket_path_;
    o.device = "fake0";
    o.port = 1;
    auto c = sa::PathServiceClient::connect(o);
    EXPECT_TRUE(c) << c.error().message;
    return c ? std::move(*c) : nullptr;
  }
  // A raw blocking connection, for questions written by hand.
  int raw() {
    auto fd = sa::connect_path_service(socket_path_);
    EXPECT_TRUE(fd) << fd.error().message;
    int flags = fcntl(*fd, F_GETFL);
    fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
    return *fd;
  }
  static std::vector<uint8_t> question_bytes(uint32_t id, const sa::PathQuery& q,
                                             uint32_t budget_ms = 0) {
    wire::Question question;
    question.op = wire::Op::kPathRecord;
    question.id = id;
    question.device = "fake0";
    question.port = 1;
    question.budget_ms = budget_ms;
    question.query = q;
    return wire::encode_question(question).value();
  }
  static std::optional<wire::Answer> read_answer(int fd, std::chrono::milliseconds within) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(within.count())) != 1) return std::nullopt;
    std::vector<uint8_t> buffer(wire::kAnswerMax);
    ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
    if (n <= 0) return std::nullopt;
    auto a = wire::decode_answer({buffer.data(), static_cast<size_t>(n)});
    if (!a) return std::nullopt;
    return std::move(*a);
  }
  nlohmann::json stats() const { return counters_->snapshot()["path_service"]; }

  std::shared_ptr<FakeSa> sa_ = std::make_shared<FakeSa>();
  std::shared_ptr<LsdCounters> counters_ = std::make_shared<LsdCounters>();
  PathServiceOptions options_;
  std::string dir_, socket_path_;
  int listen_fd_ = -1;
  std::unique_ptr<PathService> service_;
  std::thread thread_;
  int status_ = 0;
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(PathServiceTest, ConcurrentIdenticalQuestionsAreAskedOfTheSaOnce) {
  sa_->delay = 300ms;  // every question arrives while the first is with the SA
  start();
  constexpr int kRanks = 32;
  std::vector<std::unique_ptr<sa::PathServiceClient>> clients;
  for (int i = 0; i < kRanks; ++i) clients.push_back(client());
  std::vector<std::optional<Result<std::vector<sa::PathRecord>>>> answers(kRanks);
  std::barrier go(kRanks);
  std::vector<std::thread> ranks;
  for (int i = 0; i < kRanks; ++i)
    ranks.emplace_back([&, i] {
      go.arrive_and_wait();
      answers[i] = clients[i]->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
    });
  for (auto& t : ranks) t.join();
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_TRUE(*answers[i]) << i << ": " << answers[i]->error().message;
    ASSERT_EQ((*answers[i])->size(), 1u);
    EXPECT_EQ((**answers[i])[0].sl, 3);
    EXPECT_EQ((**answers[i])[0].dlid, 3);
    EXPECT_EQ(**answers[i], **answers[0]);
  }
  EXPECT_EQ(sa_->path_requests, 1);
  nlohmann::json s = stats();
  EXPECT_EQ(s["sa_requests"]["path_record"], 1);
  EXPECT_EQ(s["joined"], kRanks - 1);
  EXPECT_EQ(s["questions"]["path_record"], kRanks);
  EXPECT_EQ(s["answers"]["answered"], kRanks);
  EXPECT_EQ(s["connections"]["open"], kRanks);
}

// Different paths of one port asked at the same moment travel together on the port's one
// agent, up to the window, not one round trip after another; one worker carries them all.
TEST_F(PathServiceTest, DifferentQuestionsOfAPortAreOutstandingAtOnce) {
  sa_->delay = 500ms;  // every question arrives while the first ones are with the SA
  options_.workers = 1;
  start();
  constexpr int kPeers = 8;
  std::vector<std::unique_ptr<sa::PathServiceClient>> clients;
  for (int i = 0; i < kPeers; ++i) clients.push_back(client());
  std::vector<std::optional<Result<std::vector<sa::PathRecord>>>> answers(kPeers);
  std::barrier go(kPeers);
  std::vector<std::thread> askers;
  for (int i = 0; i < kPeers; ++i)
    askers.emplace_back([&, i] {
      go.arrive_and_wait();
      answers[i] = clients[i]->path_records(query_to(static_cast<uint8_t>(0x21 + i), 0x1003),
                                            sa::deadline_after(10s));
    });
  for (auto& t : askers) t.join();
  for (int i = 0; i < kPeers; ++i)
    ASSERT_TRUE(*answers[i]) << i << ": " << answers[i]->error().message;
  EXPECT_EQ(sa_->path_requests, kPeers);
  EXPECT_EQ(sa_->most_outstanding, kPeers);
}

// A port that fails every send answers each question with the failure, and is opened again for
// the next question rather than left failing (or spinning on questions it never takes).
TEST_F(PathServiceTest, APortWhoseSendsFailAnswersEachQuestionAndIsReopened) {
  auto opened = std::make_shared<std::atomic<int>>(0);
  options_.open_transport =
      [opened](const sa::UmadOptions&) -> Result<std::unique_ptr<sa::Transport>> {
    return std::unique_ptr<sa::Transport>(std::make_unique<BrokenTransport>(opened));
  };
  start();
  auto c = client();
  auto first = c->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, ErrorCode::kTransport) << first.error().message;
  auto second = c->path_records(query_to(0x22, 0x1003), sa::deadline_after(5s));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kTransport) << second.error().message;
  EXPECT_EQ(*opened, 2);
}

TEST_F(PathServiceTest, AQuestionAfterTheAnswerIsACacheHit) {
  start();
  auto c = client();
  auto first = c->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  ASSERT_TRUE(first) << first.error().message;
  auto second = c->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(sa_->path_requests, 1);
  EXPECT_EQ(stats()["cache_hits"], 1);
  EXPECT_EQ(stats()["sa_requests"]["path_record"], 1);
}

// The storm bench's baseline (rdma-qos-lsd --no-path-sharing): each program's questions go to
// the SA, those asked at once and those asked again alike.
TEST_F(PathServiceTest, UnsharedEveryProgramsQuestionIsAskedOfTheSa) {
  sa_->delay = 100ms;
  options_.shared = false;
  start();
  auto a = client();
  auto b = client();
  std::optional<Result<std::vector<sa::PathRecord>>> from_b;
  std::thread other(
      [&] { from_b = b->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)); });
  auto from_a = a->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  other.join();
  ASSERT_TRUE(from_a) << from_a.error().message;
  ASSERT_TRUE(*from_b) << from_b->error().message;
  auto again = a->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *from_a);
  EXPECT_EQ(sa_->path_requests, 3);
  EXPECT_EQ(stats()["joined"], 0);
  EXPECT_EQ(stats()["cache_hits"], 0);
}

TEST_F(PathServiceTest, DifferentServiceIdsAreSeparateQueries) {
  start();
  auto c = client();
  auto five = c->path_records(query_to(0x21, 0x1005), sa::deadline_after(5s));
  auto seven = c->path_records(query_to(0x21, 0x1007), sa::deadline_after(5s));
  ASSERT_TRUE(five) << five.error().message;
  ASSERT_TRUE(seven) << seven.error().message;
  EXPECT_EQ((*five)[0].sl, 5);
  EXPECT_EQ((*seven)[0].sl, 7);
  EXPECT_EQ(sa_->path_requests, 2);
}

TEST_F(PathServiceTest, AnSaTimeoutComesBackAsATimeout) {
  options_.sa.timeout = 100ms;
  start();
  auto r = client()->path_records(query_to(kSilent, 0x1003), sa::deadline_after(5s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout) << r.error().message;
  EXPECT_EQ(stats()["answers"]["failed"]["timeout"], 1);
}

TEST_F(PathServiceTest, AMadStatusComesBackWithItsStatusAndMessage) {
  start();
  auto r = client()->path_records(query_to(kNoRecords, 0x1003), sa::deadline_after(5s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kMadStatus) << r.error().message;
  EXPECT_EQ(r.error().mad_status, 0x0300);
  EXPECT_NE(r.error().message.find("SA_NO_RECORDS"), std::string::npos) << r.error().message;
  EXPECT_EQ(stats()["answers"]["failed"]["mad-status"], 1);
}

TEST_F(PathServiceTest, AMalformedQuestionIsAnsweredWithAnErrorWhenItsHeaderAllows) {
  start();
  int fd = raw();
  auto bad = question_bytes(77, query_to(0x21, 0x1003));
  bad[6] = 0;  // port 0
  ASSERT_EQ(send(fd, bad.data(), bad.size(), 0), static_cast<ssize_t>(bad.size()));
  auto a = read_answer(fd, 2s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, 77u);
  ASSERT_FALSE(a->paths);
  EXPECT_EQ(a->paths.error().code, ErrorCode::kMalformed);
  // The connection still serves.
  auto good = question_bytes(78, query_to(0x21, 0x1003));
  ASSERT_EQ(send(fd, good.data(), good.size(), 0), static_cast<ssize_t>(good.size()));
  auto b = read_answer(fd, 2s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id, 78u);
  EXPECT_TRUE(b->paths);
  close(fd);
  EXPECT_EQ(stats()["questions"]["malformed"], 1);
}

TEST_F(PathServiceTest, BytesThatAreNoQuestionCloseTheConnectionAndOthersAreServed) {
  start();
  int fd = raw();
  const uint8_t junk[] = {1, 2, 3};
  ASSERT_EQ(send(fd, junk, sizeof junk, 0), 3);
  char byte;
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  EXPECT_EQ(recv(fd, &byte, 1, 0), 0) << "the connection should be closed";
  close(fd);
  auto r = client()->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s));
  EXPECT_TRUE(r) << r.error().message;
}

TEST_F(PathServiceTest, AClientThatNeverReadsIsDroppedAndDoesNotStallOthers) {
  start();
  ASSERT_TRUE(client()->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)));
  int flood = raw();
  auto q = question_bytes(1, query_to(0x21, 0x1003));  // a cache hit: answered at once
  std::atomic<bool> flooding = true;
  std::thread sender([&] {
    for (int i = 0; i < 20000 && flooding; ++i)
      if (send(flood, q.data(), q.size(), MSG_NOSIGNAL) < 0) break;  // dropped: EPIPE
  });
  auto other = client();
  const auto start_at = Clock::now();
  for (int i = 0; i < 20; ++i) {
    auto r = other->path_records(query_to(0x22, 0x1003), sa::deadline_after(2s));
    ASSERT_TRUE(r) << r.error().message;
  }
  EXPECT_LT(Clock::now() - start_at, 2s);
  // The flooder is closed by the service once its buffer is full.
  bool closed = false;
  for (auto until = Clock::now() + 5s; !closed && Clock::now() < until;) {
    pollfd p{flood, 0, 0};
    poll(&p, 1, 100);
    closed = (p.revents & POLLHUP) != 0;
  }
  flooding = false;
  sender.join();
  close(flood);
  EXPECT_TRUE(closed);
  std::lock_guard lock(log_mutex_);
  bool said = false;
  for (const auto& line : log_) said = said || line.find("does not read") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(PathServiceTest, TheQuestionsBudgetBoundsASlowSa) {
  sa_->delay = 1500ms;
  options_.sa.timeout = 5s;
  start();
  int fd = raw();
  auto q = question_bytes(5, query_to(0x21, 0x1003), 200);
  const auto sent_at = Clock::now();
  ASSERT_EQ(send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  auto a = read_answer(fd, 2s);
  const auto took = Clock::now() - sent_at;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, 5u);
  ASSERT_FALSE(a->paths);
  EXPECT_EQ(a->paths.error().code, ErrorCode::kTimeout);
  EXPECT_GE(took, 190ms);
  EXPECT_LT(took, 1s);
  close(fd);
}

TEST_F(PathServiceTest, TheServicesOwnBudgetBoundsAQuestionWithoutOne) {
  sa_->delay = 1500ms;
  options_.sa.timeout = 5s;
  options_.budget = 300ms;
  start();
  int fd = raw();
  auto q = question_bytes(6, query_to(0x21, 0x1003), 0);
  const auto sent_at = Clock::now();
  ASSERT_EQ(send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
  auto a = read_answer(fd, 2s);
  ASSERT_TRUE(a);
  ASSERT_FALSE(a->paths);
  EXPECT_EQ(a->paths.error().code, ErrorCode::kTimeout);
  EXPECT_LT(Clock::now() - sent_at, 1s);
  close(fd);
}

TEST_F(PathServiceTest, ClassPortInfoIsAnsweredFromTheClientsCopy) {
  start();
  auto c = client();
  auto qos = c->qos_supported(sa::deadline_after(5s));
  ASSERT_TRUE(qos) << qos.error().message;
  EXPECT_TRUE(*qos);
  auto multipath = c->multipath_supported(sa::deadline_after(5s));
  ASSERT_TRUE(multipath) << multipath.error().message;
  EXPECT_TRUE(*multipath);
  EXPECT_EQ(sa_->class_port_info_requests, 1);
  EXPECT_EQ(stats()["questions"]["class_port_info"], 2);
}

TEST_F(PathServiceTest, AReconfigureFlushesTheCache) {
  start();
  auto c = client();
  ASSERT_TRUE(c->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)));
  service_->reconfigure(options_);
  ASSERT_TRUE(c->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)));
  EXPECT_EQ(sa_->path_requests, 2);
}

TEST_F(PathServiceTest, ConnectionsPastTheLimitAreClosed) {
  options_.max_connections = 2;
  start();
  auto a = client(), b = client();
  ASSERT_TRUE(a->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)));
  ASSERT_TRUE(b->path_records(query_to(0x21, 0x1003), sa::deadline_after(5s)));
  int third = raw();
  char byte;
  pollfd p{third, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  EXPECT_EQ(recv(third, &byte, 1, 0), 0);
  close(third);
  EXPECT_EQ(stats()["connections"]["refused"], 1);
}

TEST_F(PathServiceTest, AStaleSocketFileIsReplacedAndALiveOneIsNot) {
  start();
  auto again = bind_path_socket(socket_path_);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("another service listens"), std::string::npos);
  // A socket file nobody accepts on (a daemon that died) is taken over.
  const std::string stale = dir_ + "/stale.sock";
  auto first = bind_path_socket(stale);
  ASSERT_TRUE(first);
  close(*first);
  auto second = bind_path_socket(stale);
  ASSERT_TRUE(second) << second.error().message;
  struct stat st {};
  ASSERT_EQ(stat(stale.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  close(*second);
}

}  // namespace
}  // namespace rdmaqos::kmod
