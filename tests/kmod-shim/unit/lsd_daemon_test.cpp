// The daemon against a simulated kernel over NETLINK_USERSOCK, with no SA port at all: it
// announces its timeout, answers every request F_ERR (so the kernel asks the SA itself) with
// the request's seq, refuses malformed requests the same way, and keeps serving.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "../sim_kernel.h"
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
    auto d = LocalServiceDaemon::create(options_, [this](LogLevel, const std::string& m) {
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
