// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon against a simulated kernel over NETLINK_USERSOCK, with no SA port at all: it
// announces its timeout, answers every request F_ERR (so the kernel asks the SA itself) with
// the request's seq, refuses malformed requests the same way, and keeps serving. With a fake
// SA: answers, deadlines, and what it does when the kernel refuses SET_TIMEOUT.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "../sim_kernel.h"
#include "held_replies.h"
#include "ls_bytes.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/kmod-shim/lsd.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testing::RequestBytes;
using testing::SimulatedKernel;

const std::vector<uint8_t> kSgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0xa0, 0, 0x11};
const std::vector<uint8_t> kDgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0xa0, 0, 0x21};

class DaemonWithoutSa : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.netlink_family = NETLINK_USERSOCK;
    options_.kernel_port = kernel_.port();
    options_.sa.port.ca = "rdma_qos_no_such_ca";
    options_.sa.timeout = 100ms;
    options_.sa.retries = 0;
    options_.counters = counters_;
    auto d = LocalServiceDaemon::create(options_, [this](Priority, const std::string& m) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(m);
    });
    ASSERT_TRUE(d) << d.error().message;
    daemon_ = std::move(*d);
    thread_ = std::thread([this] { status_ = daemon_->run(); });
    auto first = kernel_.receive(2s);
    ASSERT_TRUE(first) << "no SET_TIMEOUT from the daemon";
    auto timeout = decode_set_timeout(*first);
    ASSERT_TRUE(timeout) << timeout.error().message;
    announced_timeout_ = std::chrono::milliseconds(*timeout);
    daemon_port_ = kernel_.last_sender();
  }
  void TearDown() override {
    if (daemon_) daemon_->stop();
    if (thread_.joinable()) thread_.join();
    EXPECT_EQ(status_, 0);
  }

  DecodedReply next_reply(std::chrono::milliseconds within) {
    auto bytes = kernel_.receive(within);
    if (!bytes) {
      ADD_FAILURE() << "no reply within " << within.count() << " ms";
      return {};
    }
    auto r = decode_resolve_reply(*bytes);
    if (!r) {
      ADD_FAILURE() << r.error().message;
      return {};
    }
    return *r;
  }

  SimulatedKernel kernel_;
  std::shared_ptr<LsdCounters> counters_ = std::make_shared<LsdCounters>();
  LsdOptions options_;
  std::unique_ptr<LocalServiceDaemon> daemon_;
  std::thread thread_;
  int status_ = -1;
  std::chrono::milliseconds announced_timeout_{0};
  uint32_t daemon_port_ = 0;
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(DaemonWithoutSa, AnnouncesItsTimeoutFirst) {
  EXPECT_EQ(announced_timeout_, kernel_timeout(options_));
  EXPECT_EQ(daemon_port_, daemon_->local_port());
}

TEST_F(DaemonWithoutSa, AnswersFErrWithTheRequestSeqWhenTheSaIsUnreachable) {
  kernel_.send_to(daemon_port_,
                  RequestBytes(1001, "mlx5_0", 1, 0).gid(4, kDgid).gid(5, kSgid).bytes());
  auto start = std::chrono::steady_clock::now();
  DecodedReply r = next_reply(announced_timeout_);
  EXPECT_LT(std::chrono::steady_clock::now() - start, announced_timeout_);
  EXPECT_TRUE(r.error);
  EXPECT_EQ(r.header.seq, 1001u);
  EXPECT_EQ(r.header.flags & NLM_F_REQUEST, 0);
  EXPECT_TRUE(r.paths.empty());
}

TEST_F(DaemonWithoutSa, MalformedRequestGetsFErrAndTheDaemonKeepsServing) {
  kernel_.send_to(daemon_port_, RequestBytes(7, "mlx5_0", 1, 9).gid(4, kDgid).bytes());
  DecodedReply bad = next_reply(1s);
  EXPECT_TRUE(bad.error);
  EXPECT_EQ(bad.header.seq, 7u);
  kernel_.send_to(daemon_port_, {1, 2, 3});  // not even a header: nothing to answer
  kernel_.send_to(daemon_port_,
                  RequestBytes(8, "mlx5_0", 1, 0).gid(4, kDgid).gid(5, kSgid).bytes());
  DecodedReply good = next_reply(announced_timeout_);
  EXPECT_EQ(good.header.seq, 8u);
  EXPECT_TRUE(good.error);
}

// --dump-netlink: what the kernel sent, byte for byte, one file a datagram; a directory that
// cannot be written is said once and the daemon answers on.
class DaemonDumpingNetlink : public DaemonWithoutSa {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdma-qos-dump-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.netlink_dump_dir = dump_into();
    DaemonWithoutSa::SetUp();
  }
  void TearDown() override {
    DaemonWithoutSa::TearDown();
    std::filesystem::remove_all(dir_);
  }
  virtual std::string dump_into() const { return dir_; }
  std::vector<std::filesystem::path> dumped() const {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) files.push_back(e.path());
    return files;
  }
  std::string dir_;
};

class DaemonDumpingNowhere : public DaemonDumpingNetlink {
  std::string dump_into() const override { return dir_ + "/missing"; }
};

TEST_F(DaemonDumpingNetlink, WritesEachDatagramFromTheKernelAsReceived) {
  const std::vector<uint8_t> request =
      RequestBytes(1001, "mlx5_0", 1, 0).gid(4, kDgid).gid(5, kSgid).bytes();
  kernel_.send_to(daemon_port_, request);
  EXPECT_EQ(next_reply(announced_timeout_).header.seq, 1001u);
  auto files = dumped();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string(), fmt::format("netlink-{}-1", getpid()));
  std::ifstream in(files[0], std::ios::binary);
  std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(written, request);
}

TEST_F(DaemonDumpingNowhere, SaysOnceThatItCannotWriteAndAnswersOn) {
  for (uint32_t seq : {1u, 2u}) {
    kernel_.send_to(daemon_port_,
                    RequestBytes(seq, "mlx5_0", 1, 0).gid(4, kDgid).gid(5, kSgid).bytes());
    EXPECT_EQ(next_reply(announced_timeout_).header.seq, seq);
  }
  std::lock_guard<std::mutex> lock(log_mutex_);
  EXPECT_EQ(std::count_if(
                log_.begin(), log_.end(),
                [](const std::string& m) { return m.starts_with("--dump-netlink: cannot write"); }),
            1);
}

// Counted before they are sent: once the kernel has both F_ERRs, the counters show them.
TEST_F(DaemonWithoutSa, CountsRequestsByKindAndFErrByReason) {
  kernel_.send_to(daemon_port_, RequestBytes(7, "mlx5_0", 1, 9).gid(4, kDgid).bytes());
  kernel_.send_to(daemon_port_,
                  RequestBytes(8, "mlx5_0", 1, 1).gid(4, kDgid).gid(5, kSgid).bytes());
  next_reply(1s);
  next_reply(announced_timeout_);
  nlohmann::json s = counters_->snapshot();
  EXPECT_EQ(s["requests"]["malformed"], 1);
  EXPECT_EQ(s["requests"]["unidirectional"], 1);
  EXPECT_EQ(s["requests"]["all"], 0);
  EXPECT_EQ(s["answers"]["path"], 0);
  EXPECT_EQ(s["answers"]["f_err"]["malformed"], 1);
  EXPECT_EQ(s["answers"]["f_err"]["sa_error"], 1);  // no SA port
  EXPECT_EQ(s["latency"]["count"], 1);              // the decoded request only
}

TEST_F(DaemonWithoutSa, AnswersEveryOneOfManyRequestsExactlyOnce) {
  constexpr uint32_t kCount = 200;
  for (uint32_t seq = 1; seq <= kCount; ++seq)
    kernel_.send_to(daemon_port_,
                    RequestBytes(seq, "mlx5_0", 1, seq % 3).gid(4, kDgid).gid(5, kSgid).bytes());
  std::multiset<uint32_t> seen;
  while (seen.size() < kCount) {
    auto bytes = kernel_.receive(announced_timeout_);
    ASSERT_TRUE(bytes) << "only " << seen.size() << " replies";
    auto r = decode_resolve_reply(*bytes);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->error);
    seen.insert(r->header.seq);
  }
  for (uint32_t seq = 1; seq <= kCount; ++seq) EXPECT_EQ(seen.count(seq), 1u) << seq;
  EXPECT_FALSE(kernel_.receive(300ms)) << "an extra reply";
}

TEST_F(DaemonWithoutSa, IgnoresRequestsFromAnyoneButTheKernel) {
  SimulatedKernel stranger;
  stranger.send_to(daemon_port_,
                   RequestBytes(3, "mlx5_0", 1, 0).gid(4, kDgid).gid(5, kSgid).bytes());
  EXPECT_FALSE(stranger.receive(300ms));
  EXPECT_FALSE(kernel_.receive(300ms));
}

}  // namespace
}  // namespace rdmaqos::kmod

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testing::RequestBytes;
using testing::SimulatedKernel;

// An SA behind a fake transport: answers a PathRecord Get with one record after `delay` (SL 9,
// LIDs 2 -> 3; the reverse path to the GID ending 0x11, SL 10, LIDs 3 -> 2), and never answers
// queries whose DGID ends in 0x99.
class ScriptedSa final : public sa::Transport {
 public:
  explicit ScriptedSa(std::chrono::milliseconds delay) : delay_(delay) {
    port_.ca = "fake0";
    port_.port = 1;
    port_.lid = 2;
    port_.sm_lid = 1;
  }
  rdmaqos::Result<rdmaqos::Ok> send(std::span<const uint8_t> bytes, uint16_t, uint8_t,
                                    std::chrono::milliseconds) override {
    auto mad = sa::decode_sa_mad(bytes);
    if (!mad) return mad.error();
    auto query = sa::decode_path_record(mad->data);
    if (!query) return query.error();
    if (query->dgid[15] == 0x99) return rdmaqos::Ok{};
    sa::PathRecord answer = *query;
    const bool reverse = query->dgid[15] == 0x11;
    answer.sl = reverse ? 10 : 9;
    answer.slid = reverse ? 3 : 2;
    answer.dlid = reverse ? 2 : 3;
    answer.qos_class = 0;  // as OpenSM: not echoed
    sa::SaMad reply;
    reply.mad.method = sa::method::kGetResp;
    reply.mad.attr_id = sa::attr::kPathRecord;
    reply.mad.tid = mad->mad.tid;
    auto wire = sa::encode_path_record(answer);
    reply.data.assign(wire->begin(), wire->end());
    held_.hold(sa::encode_sa_mad(reply), delay_);
    return rdmaqos::Ok{};
  }
  rdmaqos::Result<std::optional<sa::ReceivedMad>> receive(
      std::chrono::milliseconds timeout) override {
    return held_.receive(timeout);
  }
  const sa::PortAttributes& port() const override { return port_; }
  rdmaqos::Result<sa::PortAttributes> refresh_port() override { return port_; }

 private:
  std::chrono::milliseconds delay_;
  sa::PortAttributes port_;
  testing::HeldReplies held_;
};

const std::vector<uint8_t> kSilentDgid = {0xfe, 0x80, 0,    0, 0, 0,    0, 0,
                                          0,    2,    0xc9, 3, 0, 0xa0, 0, 0x99};

class DaemonWithFakeSa : public ::testing::Test {
 protected:
  void start(std::chrono::milliseconds sa_delay, std::chrono::milliseconds attempt, int retries) {
    options_.netlink_family = NETLINK_USERSOCK;
    options_.kernel_port = kernel_.port();
    options_.sa.timeout = attempt;
    options_.sa.retries = retries;
    options_.counters = counters_;
    options_.open_client =
        [this,
         sa_delay](const sa::UmadOptions& port) -> rdmaqos::Result<std::unique_ptr<sa::Client>> {
      std::lock_guard<std::mutex> lock(log_mutex_);
      opened_ports_.push_back(port);
      return std::make_unique<sa::Client>(std::make_unique<ScriptedSa>(sa_delay), options_.sa);
    };
    auto d = LocalServiceDaemon::create(options_, [this](Priority level, const std::string& m) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.emplace_back(level, m);
    });
    ASSERT_TRUE(d) << d.error().message;
    daemon_ = std::move(*d);
    thread_ = std::thread([this] { daemon_->run(); });
    auto first = kernel_.receive(2s);
    ASSERT_TRUE(first);
    announced_timeout_ = std::chrono::milliseconds(decode_set_timeout(*first).value());
    set_timeout_seq_ = peek_header(*first).value().seq;
    daemon_port_ = kernel_.last_sender();
  }
  // Whether a line at `level` containing every one of `parts` was logged within `within`.
  bool logged(Priority level, std::initializer_list<std::string> parts,
              std::chrono::milliseconds within = 1s) {
    auto until = std::chrono::steady_clock::now() + within;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(log_mutex_);
        for (const auto& [l, line] : log_) {
          bool all = l == level;
          for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
          if (all) return true;
        }
      }
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(10ms);
    }
  }
  std::string log_text() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    std::string out;
    for (const auto& [l, line] : log_) out += line + "\n";
    return out;
  }
  void TearDown() override {
    if (daemon_) daemon_->stop();
    if (thread_.joinable()) thread_.join();
  }
  void send(uint32_t seq, const std::vector<uint8_t>& dgid, uint16_t qos_class = 0,
            uint8_t path_use = 0, const std::vector<uint8_t>& sgid = kSgid,
            const char* device = "mlx5_0", uint8_t port = 1) {
    RequestBytes r(seq, device, port, path_use);
    r.gid(4, dgid).gid(5, sgid);
    if (qos_class) r.u16(8, qos_class);
    kernel_.send_to(daemon_port_, r.bytes());
  }
  // The next reply and when it came.
  std::pair<DecodedReply, std::chrono::steady_clock::time_point> next(
      std::chrono::milliseconds within) {
    auto bytes = kernel_.receive(within);
    auto at = std::chrono::steady_clock::now();
    if (!bytes) {
      ADD_FAILURE() << "no reply within " << within.count() << " ms";
      return {};
    }
    auto r = decode_resolve_reply(*bytes);
    EXPECT_TRUE(r);
    return {r ? *r : DecodedReply{}, at};
  }

  SimulatedKernel kernel_;
  std::shared_ptr<LsdCounters> counters_ = std::make_shared<LsdCounters>();
  LsdOptions options_;
  std::unique_ptr<LocalServiceDaemon> daemon_;
  std::thread thread_;
  std::chrono::milliseconds announced_timeout_{0};
  uint32_t set_timeout_seq_ = 0;
  uint32_t daemon_port_ = 0;
  std::mutex log_mutex_;
  std::vector<std::pair<Priority, std::string>> log_;
  std::vector<sa::UmadOptions> opened_ports_;  // every port an SA client was opened on
};

// "mlx5_0:1", as the daemon was asked to open the port.
std::string port_name(const sa::UmadOptions& p) {
  return p.ca + ":" + std::to_string(p.port);
}

// Multi-rail hosts: each request goes out through the device and port the kernel named, one SA
// client per port (each port has its own SM LID and SA), opened once.
TEST_F(DaemonWithFakeSa, EachRequestIsAnsweredThroughThePortItNames) {
  start(5ms, 200ms, 1);
  send(1, kDgid, 0, 2, kSgid, "mlx5_0", 1);
  send(2, kDgid, 0, 2, kSgid, "mlx5_0", 2);
  send(3, kDgid, 0, 2, kSgid, "mlx5_1", 1);
  send(4, kDgid, 0, 2, kSgid, "mlx5_0", 2);
  std::set<uint32_t> answered;
  for (int i = 0; i < 4; ++i) {
    auto [reply, at] = next(announced_timeout_);
    EXPECT_FALSE(reply.error);
    answered.insert(reply.header.seq);
  }
  EXPECT_EQ(answered, (std::set<uint32_t>{1, 2, 3, 4}));
  std::lock_guard<std::mutex> lock(log_mutex_);
  std::multiset<std::string> opened;
  for (const auto& p : opened_ports_) opened.insert(port_name(p));
  EXPECT_EQ(opened, (std::multiset<std::string>{"mlx5_0:1", "mlx5_0:2", "mlx5_1:1"}));
}

TEST_F(DaemonWithFakeSa, AnswersWithTheSasPathAndTheRequestsQosClass) {
  start(10ms, 200ms, 1);
  send(1, kDgid, 7);
  auto [reply, at] = next(announced_timeout_);
  ASSERT_FALSE(reply.error);
  ASSERT_EQ(reply.paths.size(), 3u);
  EXPECT_EQ(reply.paths[0].record.sl, 9);
  EXPECT_EQ(reply.paths[0].record.qos_class, 7);
  EXPECT_EQ(reply.paths[0].flags, 0x2Bu);
  EXPECT_EQ(reply.paths[1].flags, 0x0Au);
  EXPECT_EQ(reply.paths[1].record.sl, 9);
  // INBOUND: the second SA query's reverse path, with the request's QoS class too.
  EXPECT_EQ(reply.paths[2].flags, 0x12u);
  EXPECT_EQ(reply.paths[2].record.sl, 10);
  EXPECT_EQ(reply.paths[2].record.slid, 3);
  EXPECT_EQ(reply.paths[2].record.dlid, 2);
  EXPECT_EQ(reply.paths[2].record.qos_class, 7);
}

// The SL of the path answered (the fake SA gives SL 9 forward), per request, not per record.
TEST_F(DaemonWithFakeSa, CountsAnsweredPathsBySl) {
  start(10ms, 200ms, 1);
  send(1, kDgid, 7);
  send(2, kDgid, 0, 2);
  next(announced_timeout_);
  next(announced_timeout_);
  nlohmann::json s = counters_->snapshot();
  EXPECT_EQ(s["answers"]["path"], 2);
  EXPECT_EQ(s["paths_by_sl"], nlohmann::json({{"9", 2}}));
  EXPECT_EQ(s["requests"]["all"], 1);
  EXPECT_EQ(s["requests"]["gmp"], 1);
  EXPECT_EQ(s["latency"]["count"], 2);
}

TEST_F(DaemonWithFakeSa, GmpAndUnidirectionalGetOneRecord) {
  start(10ms, 200ms, 1);
  send(1, kDgid, 0, 2);
  send(2, kDgid, 0, 1);
  std::map<uint32_t, DecodedReply> got;
  for (int i = 0; i < 2; ++i) {
    auto [reply, at] = next(announced_timeout_);
    got[reply.header.seq] = reply;
  }
  ASSERT_EQ(got[1].paths.size(), 1u);
  EXPECT_EQ(got[1].paths[0].flags, 0x2Bu);
  ASSERT_EQ(got[2].paths.size(), 1u);
  EXPECT_EQ(got[2].paths[0].flags, 0x0Au);
}

TEST_F(DaemonWithFakeSa, SilentReverseQueryStillGetsTheGmpAnswerNotFErr) {
  start(10ms, 150ms, 0);
  auto sent = std::chrono::steady_clock::now();
  send(3, kDgid, 0, 0, kSilentDgid);  // the reverse query goes to the silent GID
  send(4, kDgid);                     // not held up by it
  auto [first, first_at] = next(announced_timeout_);
  EXPECT_EQ(first.header.seq, 4u);
  EXPECT_EQ(first.paths.size(), 3u);
  EXPECT_LT(first_at - sent, 140ms);
  auto [reply, at] = next(announced_timeout_);
  EXPECT_EQ(reply.header.seq, 3u);
  ASSERT_FALSE(reply.error);
  ASSERT_EQ(reply.paths.size(), 2u);
  EXPECT_EQ(reply.paths[0].flags, 0x2Bu);
  EXPECT_EQ(reply.paths[1].flags, 0x0Au);
  EXPECT_EQ(reply.paths[0].record.sl, 9);
  EXPECT_LT(at - sent, announced_timeout_);
}

TEST_F(DaemonWithFakeSa, SilentSaGetsFErrBeforeTheKernelsTimeout) {
  start(10ms, 150ms, 1);  // two attempts of 150 ms
  auto sent = std::chrono::steady_clock::now();
  send(5, kSilentDgid);
  auto [reply, at] = next(announced_timeout_);
  EXPECT_TRUE(reply.error);
  EXPECT_EQ(reply.header.seq, 5u);
  EXPECT_GE(at - sent, 300ms) << "F_ERR before the SA's attempts ran out";
  EXPECT_LT(at - sent, announced_timeout_) << "after the kernel gave up";
}

TEST_F(DaemonWithFakeSa, OneSilentQueryDoesNotHoldUpTheOthers) {
  start(20ms, 1000ms, 0);
  auto sent = std::chrono::steady_clock::now();
  send(1, kSilentDgid);
  std::this_thread::sleep_for(50ms);  // the silent one is in the SA window first
  for (uint32_t seq = 2; seq <= 11; ++seq) send(seq, kDgid);
  std::set<uint32_t> answered;
  for (int i = 0; i < 10; ++i) {
    auto [reply, at] = next(1s);
    EXPECT_FALSE(reply.error) << reply.header.seq;
    EXPECT_LT(at - sent, 500ms) << "waited for the silent query";
    answered.insert(reply.header.seq);
  }
  EXPECT_EQ(answered.size(), 10u);
  EXPECT_EQ(answered.count(1), 0u);
  auto [last, at] = next(announced_timeout_);
  EXPECT_EQ(last.header.seq, 1u);
  EXPECT_TRUE(last.error);
}

TEST_F(DaemonWithFakeSa, RefusedSetTimeoutIsWarnedAndFErrComesInsideTheKernelsDefault) {
  start(10ms, 1000ms, 2);  // 3 attempts of 1 s: 3180 ms of SA budget, 4180 ms asked for
  ASSERT_EQ(announced_timeout_, 4180ms);
  // The kernel refuses it (as for a sender without CAP_NET_ADMIN) and keeps its 2000 ms.
  kernel_.send_to(daemon_port_, testing::ack_bytes(set_timeout_seq_, -EPERM, 0x1001, 0x0005, 24));
  EXPECT_TRUE(logged(Priority::kWarning,
                     {"refused SET_TIMEOUT (4180 ms)", "Operation not permitted", "CAP_NET_ADMIN",
                      "F_ERR now comes after 1500 ms", "sa_timeout_ms"}))
      << log_text();
  auto sent = std::chrono::steady_clock::now();
  send(6, kSilentDgid);
  auto [reply, at] = next(3s);
  EXPECT_TRUE(reply.error);
  EXPECT_EQ(reply.header.seq, 6u);
  EXPECT_GE(at - sent, 1500ms) << "F_ERR before the lowered budget ran out";
  EXPECT_LT(at - sent, 2000ms) << "after the kernel's default timeout";
}

TEST_F(DaemonWithFakeSa, AcceptedSetTimeoutIsLoggedAndNothingIsWarned) {
  start(10ms, 200ms, 1);
  kernel_.send_to(daemon_port_, testing::ack_bytes(set_timeout_seq_, 0, 0x1001, 0x0005, 24));
  EXPECT_TRUE(logged(Priority::kInfo, {"the kernel accepted SET_TIMEOUT",
                                       std::to_string(announced_timeout_.count()) + " ms"}))
      << log_text();
  EXPECT_FALSE(logged(Priority::kWarning, {"refused"}, 100ms)) << log_text();
}

TEST_F(DaemonWithFakeSa, RefusedReplyWithTheSameSeqIsNotARefusedSetTimeout) {
  start(10ms, 200ms, 1);
  // The kernel's own request seqs start at 1 too: only the answered type tells them apart.
  kernel_.send_to(daemon_port_, testing::ack_bytes(set_timeout_seq_, -EPERM, 0x1000, 0, 16));
  EXPECT_TRUE(logged(Priority::kWarning,
                     {"refused the reply to request seq " + std::to_string(set_timeout_seq_)}))
      << log_text();
  EXPECT_FALSE(logged(Priority::kWarning, {"refused SET_TIMEOUT"}, 100ms)) << log_text();
  // The budget is unchanged: a good answer still comes, and F_ERR only after 2 x 200 ms.
  send(7, kDgid);
  auto [reply, at] = next(announced_timeout_);
  EXPECT_FALSE(reply.error);
}

}  // namespace
}  // namespace rdmaqos::kmod

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;

// Runs a daemon without an SA until its first responder check has run; returns its warnings.
std::vector<std::string> warnings_of_a_short_run(LsdOptions o) {
  testing::SimulatedKernel kernel;
  o.netlink_family = NETLINK_USERSOCK;
  o.kernel_port = kernel.port();
  o.sa.port.ca = "rdma_qos_no_such_ca";
  std::mutex m;
  std::vector<std::string> log;
  auto d = LocalServiceDaemon::create(o, [&](Priority level, const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    if (level == Priority::kWarning) log.push_back(s);
  });
  if (!d) {
    ADD_FAILURE() << d.error().message;
    return {};
  }
  std::thread t([&] { (*d)->run(); });
  EXPECT_TRUE(kernel.receive(2s));  // SET_TIMEOUT: running; the checks follow it
  std::this_thread::sleep_for(50ms);
  (*d)->stop();
  t.join();
  std::lock_guard<std::mutex> lock(m);
  return log;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

TEST(DaemonNamespace, WarnsOutsideTheInitialNetworkNamespace) {
  // PID 1's namespace file stood in by another file: a different namespace.
  char path[] = "/tmp/rdma-qos-netns-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  LsdOptions o;
  o.initial_netns = path;
  auto warnings = warnings_of_a_short_run(o);
  unlink(path);
  EXPECT_TRUE(any_contains(warnings, "not in the initial network namespace"));
  EXPECT_TRUE(any_contains(warnings, "only to listeners in the initial namespace"));
}

TEST(DaemonNamespace, SaysNothingInTheInitialOneOrWhenItCannotTell) {
  LsdOptions same;
  same.initial_netns = "/proc/self/ns/net";
  EXPECT_FALSE(any_contains(warnings_of_a_short_run(same), "namespace"));
  LsdOptions unreadable;
  unreadable.initial_netns = "/nonexistent/ns/net";
  EXPECT_FALSE(any_contains(warnings_of_a_short_run(unreadable), "namespace"));
}

TEST(DaemonResponders, ReportsAnotherResponderOnTheGroup) {
  // A competitor (as ibacm would be) subscribed to the group before the daemon starts.
  int other = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_USERSOCK);
  ASSERT_GE(other, 0);
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  a.nl_groups = 1u << (kGroupLs - 1);
  ASSERT_EQ(bind(other, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(other, reinterpret_cast<sockaddr*>(&a), &len);

  testing::SimulatedKernel kernel;
  LsdOptions o;
  o.netlink_family = NETLINK_USERSOCK;
  o.kernel_port = kernel.port();
  o.sa.port.ca = "rdma_qos_no_such_ca";
  std::mutex m;
  std::vector<std::string> log;
  auto d = LocalServiceDaemon::create(o, [&](Priority level, const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    if (level == Priority::kWarning) log.push_back(s);
  });
  ASSERT_TRUE(d);
  std::thread t([&] { (*d)->run(); });
  ASSERT_TRUE(kernel.receive(2s));  // SET_TIMEOUT: running; the first check follows it
  std::this_thread::sleep_for(50ms);
  (*d)->stop();
  t.join();
  close(other);
  const std::string port = "netlink port " + std::to_string(a.nl_pid);
  bool found = false;
  for (const auto& line : log)
    found = found || (line.find("another responder") != std::string::npos &&
                      line.find(port) != std::string::npos);
  EXPECT_TRUE(found) << "no warning naming " << port;
}

}  // namespace
}  // namespace rdmaqos::kmod
