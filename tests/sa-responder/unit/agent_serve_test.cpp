// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA agent's serving over a scripted port: a MAD the port fails (a receive, or the send of
// its answer, e.g. a TID the kernel still has queued) is reported and serving goes on; only a
// port whose device is gone, or that fails every receive, ends it.
#include <arpa/inet.h>
#include <infiniband/umad.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>

#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/agent.h"

namespace rdmaqos::sad {
namespace {

using Kind = Served::Kind;
using std::chrono::milliseconds;

// A port that hands out scripted MADs and receive errors, and accepts or refuses each send.
class ScriptedPort final : public MadPort {
 public:
  struct Incoming {
    int error = 0;  // -errno instead of a MAD
    int needs = 0;  // with -ENOSPC: the MAD bytes the buffer must hold
    std::vector<uint8_t> mad;
    uint16_t slid = 0;
    uint32_t qpn = 1;
    int status = 0;  // the umad status: a send of ours the MAD layer handed back
  };
  std::deque<Incoming> incoming;  // empty: the receive times out
  std::deque<int> send_results;   // 0 or -errno per send; empty: accepted
  std::vector<std::vector<uint8_t>> sent;
  std::vector<std::pair<uint16_t, uint32_t>> sent_to;  // LID and QPN of each send
  std::vector<int> timeouts;                           // response timeout of each send
  std::vector<size_t> buffer_sizes;                    // of each receive
  bool device_present = true;

  int recv(std::span<uint8_t> buffer, int& length, milliseconds) override {
    buffer_sizes.push_back(buffer.size());
    if (incoming.empty()) return -ETIMEDOUT;
    Incoming& in = incoming.front();
    if (in.error == -ENOSPC && buffer.size() < umad_size() + static_cast<size_t>(in.needs)) {
      length = in.needs;
      return -ENOSPC;
    }
    if (in.error != 0 && in.error != -ENOSPC) {
      int error = in.error;
      incoming.pop_front();
      return error;
    }
    std::memset(buffer.data(), 0, umad_size());
    std::memcpy(umad_get_mad(buffer.data()), in.mad.data(), in.mad.size());
    umad_set_addr(buffer.data(), in.slid, static_cast<int>(in.qpn), 0,
                  static_cast<int>(sa::kSaQkey));
    reinterpret_cast<ib_user_mad*>(buffer.data())->status = in.status;
    length = static_cast<int>(in.mad.size());
    incoming.pop_front();
    return 0;
  }

  int send(std::span<uint8_t> buffer, int length, int response_timeout_ms) override {
    timeouts.push_back(response_timeout_ms);
    int rc = 0;
    if (!send_results.empty()) {
      rc = send_results.front();
      send_results.pop_front();
    }
    if (rc == 0) {
      const auto* mad = static_cast<const uint8_t*>(umad_get_mad(buffer.data()));
      sent.emplace_back(mad, mad + length);
      const ib_mad_addr_t* addr = umad_get_mad_addr(buffer.data());
      sent_to.emplace_back(ntohs(addr->lid), ntohl(addr->qpn));
    }
    return rc;
  }

  bool alive() override { return device_present; }
};

// A PathRecord Get with transaction ID `tid`, as bytes on the wire.
std::vector<uint8_t> request(uint64_t tid) {
  sa::SaMad m;
  m.mad.base_version = 1;
  m.mad.mgmt_class = sa::kSaClass;
  m.mad.class_version = sa::kSaClassVersion;
  m.mad.method = sa::method::kGet;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = tid;
  m.data.assign(sa::kSaDataSize, 0);
  return sa::encode_sa_mad(m);
}

ScriptedPort::Incoming mad(uint64_t tid) {
  ScriptedPort::Incoming in;
  in.mad = request(tid);
  in.slid = 2;
  return in;
}
ScriptedPort::Incoming failure(int err) {
  ScriptedPort::Incoming in;
  in.error = -err;
  return in;
}

// Answers every request with an empty GetResp of the same TID.
std::optional<sa::SaMad> echo(const Request& r) {
  sa::SaMad resp = r.mad;
  resp.mad.method = sa::method::kGetResp;
  return resp;
}

uint64_t tid_of(const std::vector<uint8_t>& bytes) {
  auto m = sa::decode_sa_mad(bytes);
  return m ? m->mad.tid : 0;
}

class AgentServing : public ::testing::Test {
 protected:
  ScriptedPort* port = new ScriptedPort();
  SaAgent agent{std::unique_ptr<MadPort>(port), AgentOptions{}};

  rdmaqos::Result<Served> serve() { return agent.serve_one(echo, milliseconds(100)); }
};

TEST_F(AgentServing, NothingWaitingIsNoError) {
  auto served = serve();
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->kind, Kind::kNothing);
}

TEST_F(AgentServing, AnsweredRequestIsHandled) {
  port->incoming = {mad(7)};
  auto served = serve();
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->kind, Kind::kHandled);
  ASSERT_EQ(port->sent.size(), 1u);
  EXPECT_EQ(tid_of(port->sent[0]), 7u);
}

// The kernel refuses a response whose TID and destination match one it still has queued
// (EINVAL): that requester gets no answer, the next one does.
TEST_F(AgentServing, ARefusedSendIsReportedAndTheNextRequestIsAnswered) {
  port->incoming = {mad(1), mad(2)};
  port->send_results = {-EINVAL};
  auto first = serve();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->kind, Kind::kSendError);
  ASSERT_TRUE(first->error);
  EXPECT_EQ(first->error->code, rdmaqos::ErrorCode::kTransport);
  EXPECT_EQ(first->error->message, "umad_send to LID 2: Invalid argument");
  auto second = serve();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->kind, Kind::kHandled);
  ASSERT_EQ(port->sent.size(), 1u);
  EXPECT_EQ(tid_of(port->sent[0]), 2u);
}

TEST_F(AgentServing, AFailedReceiveIsReportedAndServingGoesOn) {
  port->incoming = {failure(EFAULT), mad(3)};
  auto first = serve();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->kind, Kind::kReceiveError);
  ASSERT_TRUE(first->error);
  EXPECT_EQ(first->error->code, rdmaqos::ErrorCode::kTransport);
  EXPECT_EQ(first->error->message, "umad_recv: Bad address");
  auto second = serve();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->kind, Kind::kHandled);
  EXPECT_EQ(port->sent.size(), 1u);
}

// Once the device is gone the kernel fails reads and writes with EIO and flags the file.
TEST_F(AgentServing, AReceiveFromAGoneDeviceEndsServing) {
  port->incoming = {failure(EIO)};
  port->device_present = false;
  auto served = serve();
  ASSERT_FALSE(served);
  EXPECT_EQ(served.error().message, "umad_recv: Input/output error: the port is gone");
}

TEST_F(AgentServing, ASendToAGoneDeviceEndsServing) {
  port->incoming = {mad(4)};
  port->send_results = {-EIO};
  port->device_present = false;
  EXPECT_FALSE(serve());
}

TEST_F(AgentServing, ErrorsThatNameAGoneDeviceEndServingAtOnce) {
  for (int err : {ENODEV, ENXIO, EBADF, EPIPE}) {
    port->incoming = {failure(err)};
    EXPECT_FALSE(serve()) << err;
  }
}

// A port that fails every read would otherwise be served in a busy loop.
TEST_F(AgentServing, ReceivesFailingWithoutEndEndServing) {
  for (int i = 1; i < SaAgent::kMaxReceiveErrorsInARow; ++i)
    port->incoming.push_back(failure(EFAULT));
  port->incoming.push_back(mad(5));  // one MAD resets the run
  for (int i = 1; i < SaAgent::kMaxReceiveErrorsInARow; ++i)
    port->incoming.push_back(failure(EFAULT));
  for (int i = 0; i < 2 * (SaAgent::kMaxReceiveErrorsInARow - 1) + 1; ++i) {
    auto served = serve();
    ASSERT_TRUE(served) << i << ": " << served.error().message;
  }
  port->incoming.push_back(failure(EFAULT));
  auto last = serve();
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().message, "umad_recv: Bad address (100 receives in a row failed)");
}

// An RMPP-reassembled request longer than the buffer stays queued (ENOSPC): the buffer grows and
// the same request is read at once.
TEST_F(AgentServing, ALongRequestGrowsTheBuffer) {
  ScriptedPort::Incoming big = mad(6);
  big.error = -ENOSPC;
  big.needs = 4000;
  port->incoming = {big};
  auto served = serve();
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->kind, Kind::kHandled);
  ASSERT_EQ(port->buffer_sizes.size(), 2u);
  EXPECT_EQ(port->buffer_sizes[1], umad_size() + 4000);
  EXPECT_EQ(port->sent.size(), 1u);
}

// An answer computed later, on another thread: the responder keeps the request and answers
// nothing now; send() then addresses the answer as serve_one would have.
TEST_F(AgentServing, AnAnswerSentLaterFromAnotherThreadGoesToTheRequester) {
  ScriptedPort::Incoming in = mad(9);
  in.slid = 5;
  in.qpn = 0x42;
  port->incoming = {in, mad(10)};
  std::optional<Request> kept;
  auto served = agent.serve_one(
      [&kept](const Request& r) -> std::optional<sa::SaMad> {
        kept = r;
        return std::nullopt;
      },
      milliseconds(100));
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->kind, Kind::kHandled);
  EXPECT_TRUE(port->sent.empty());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->reply.lid, 5);
  EXPECT_EQ(kept->reply.qpn, 0x42u);

  std::optional<rdmaqos::Result<Served>> later;
  std::thread worker([&] { later = agent.send(*kept, *echo(*kept)); });
  worker.join();
  ASSERT_TRUE(later && *later) << (*later).error().message;
  EXPECT_EQ((**later).kind, Kind::kHandled);
  // The next request is answered at once, as before.
  ASSERT_TRUE(serve());
  ASSERT_EQ(port->sent.size(), 2u);
  EXPECT_EQ(tid_of(port->sent[0]), 9u);
  EXPECT_EQ(port->sent_to[0], std::make_pair(uint16_t{5}, uint32_t{0x42}));
  EXPECT_EQ(tid_of(port->sent[1]), 10u);
  EXPECT_EQ(port->sent_to[1], std::make_pair(uint16_t{2}, uint32_t{1}));
}

TEST_F(AgentServing, ALaterSendTheKernelRefusesIsReported) {
  port->incoming = {mad(11)};
  std::optional<Request> kept;
  ASSERT_TRUE(agent.serve_one(
      [&kept](const Request& r) -> std::optional<sa::SaMad> {
        kept = r;
        return std::nullopt;
      },
      milliseconds(100)));
  port->send_results = {-EINVAL};
  auto sent = agent.send(*kept, *echo(*kept));
  ASSERT_TRUE(sent) << sent.error().message;
  EXPECT_EQ(sent->kind, Kind::kSendError);
  port->send_results = {-EIO};
  port->device_present = false;
  EXPECT_FALSE(agent.send(*kept, *echo(*kept)));
}

// A request of the SA's own (its subscription to the SM's traps) goes out with a response
// timeout, so the MAD layer matches the SM's answer to it; handed back without one it is
// kUnanswered, an answer handed back stays a send error.
TEST(AgentOwnRequests, GoWithATimeoutAndComeBackUnansweredOrAnswered) {
  auto* port = new ScriptedPort();
  SaAgent agent{std::unique_ptr<MadPort>(port), AgentOptions{}};
  sa::SaMad set;
  set.mad.method = sa::method::kSet;
  set.mad.attr_id = sa::attr::kInformInfo;
  set.mad.tid = 5;
  set.data.assign(36, 0);
  auto sent = agent.send_request({1, sa::kSaQp, 0, 0}, set, milliseconds(1000));
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->kind, Kind::kHandled);
  ASSERT_EQ(port->timeouts.size(), 1u);
  EXPECT_EQ(port->timeouts[0], 1000);
  EXPECT_EQ(port->sent_to[0], (std::pair<uint16_t, uint32_t>{1, 1}));
  // Answers go with none.
  port->incoming.push_back(mad(6));
  ASSERT_TRUE(agent.serve_one(echo, milliseconds(0)));
  EXPECT_EQ(port->timeouts.back(), 0);

  ScriptedPort::Incoming back;
  back.mad = sa::encode_sa_mad(set);
  back.slid = 1;
  back.status = ETIMEDOUT;
  port->incoming.push_back(back);
  bool asked = false;
  auto served = agent.serve_one(
      [&](const Request&) {
        asked = true;
        return std::optional<sa::SaMad>();
      },
      milliseconds(0));
  ASSERT_TRUE(served);
  EXPECT_EQ(served->kind, Kind::kUnanswered);
  EXPECT_FALSE(asked);

  ScriptedPort::Incoming answer = back;
  answer.mad[3] = sa::method::kGetResp;
  port->incoming.push_back(answer);
  served = agent.serve_one(echo, milliseconds(0));
  ASSERT_TRUE(served);
  EXPECT_EQ(served->kind, Kind::kSendError);
}

}  // namespace
}  // namespace rdmaqos::sad
