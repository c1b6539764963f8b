// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd end to end: the daemon runs at node001 of an ibsim fabric whose OpenSM enforces
// the sample iSER / GOLD policy, a simulated kernel on NETLINK_USERSOCK sends it RESOLVE
// requests as sa_query.c builds them, and the replies carry the SL of the policy's Service-ID
// and QoS-Class rules. Faults: an SA that stops answering (OpenSM frozen mid-test) gets F_ERR
// after every attempt timed out and before the kernel's timeout, and requests are answered
// again once it is back; an unroutable SA LID gets F_ERR at once; malformed requests get F_ERR
// and the daemon keeps serving. path_use ALL gets three records:
// GMP, OUTBOUND and the reverse query's INBOUND path (SLID and DLID swapped).
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "../sim_kernel.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;
using testing::SimulatedKernel;

sa::Gid gid_of(uint64_t port_guid) {
  return sa::make_gid(0xfe80000000000000ULL, port_guid);
}

class LsdOpenSm : public ::testing::Test {
 protected:
  // The sample policy's ISER and GOLD levels, and its Initiators rule for node001 alone: the
  // paths of QoS class 9 are asymmetric, SL 3 from node001, the default SL 0 towards it.
  static void SetUpTestSuite() {
    const uint64_t node001 = testbed::make_fat_tree({}).node("node001").port_guid;
    fabric_ = testbed::start_fat_tree(
        testbed::sample_policy({.sdp_ulp = false, .initiator_port_guid = node001}));
  }
  static void TearDownTestSuite() { fabric_.reset(); }
  void TearDown() override {
    if (daemon_) {
      daemon_->stop();
      if (HasFailure()) std::cerr << "rdma-qos-lsd log:\n" << log() << "\n";
    }
  }

  // Starts rdma-qos-lsd at node001 playing `kernel_` and waits for its SET_TIMEOUT.
  void start(std::vector<std::string> extra = {}) {
    const std::string config = fabric_->dir() + "/lsd.conf";
    std::ofstream(config) << "log_level debug\n";
    static int started = 0;
    log_path_ = fabric_->dir() + "/lsd-" + std::to_string(++started) + ".log";
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_LSD,       "--foreground",           "--no-control-socket",
              "--no-path-socket", "--test-usersock-kernel", std::to_string(kernel_.port())};
    p.argv.insert(p.argv.end(), extra.begin(), extra.end());
    p.env = fabric_->client_env("node001");
    p.env["RDMA_QOS_CONFIG"] = config;
    p.cwd = fabric_->dir();
    p.output_path = log_path_;
    daemon_ = std::make_unique<testbed::Process>(testbed::Process::spawn(p));
    auto first = kernel_.receive(10s);
    ASSERT_TRUE(first) << "no SET_TIMEOUT from rdma-qos-lsd:\n" << log();
    auto timeout = decode_set_timeout(*first);
    ASSERT_TRUE(timeout) << timeout.error().message;
    kernel_timeout_ = std::chrono::milliseconds(*timeout);
    daemon_port_ = kernel_.last_sender();
  }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  ResolveRequest request(uint32_t seq, PathUse use) const {
    ResolveRequest r;
    r.seq = seq;
    r.device = "ibsim0";
    r.port_num = 1;
    r.path_use = use;
    r.sgid = gid_of(fabric_->port_guid("node001"));
    r.dgid = gid_of(fabric_->port_guid("node002"));
    r.pkey = 0xffff;
    return r;
  }

  void send(const ResolveRequest& r) { kernel_.send_to(daemon_port_, encode_resolve_request(r)); }

  // Every reply that arrives within the kernel's timeout, by seq, until `count` are in.
  std::map<uint32_t, std::pair<DecodedReply, std::vector<uint8_t>>> replies(size_t count) {
    std::map<uint32_t, std::pair<DecodedReply, std::vector<uint8_t>>> out;
    auto until = std::chrono::steady_clock::now() + kernel_timeout_;
    while (out.size() < count) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left <= 0ms) break;
      auto bytes = kernel_.receive(left);
      if (!bytes) break;
      auto r = decode_resolve_reply(*bytes);
      EXPECT_TRUE(r) << r.error().message;
      if (r) out[r->header.seq] = {*r, *bytes};
    }
    EXPECT_EQ(out.size(), count) << "replies within the kernel's timeout of "
                                 << kernel_timeout_.count() << " ms";
    return out;
  }

  static inline std::unique_ptr<IbFabric> fabric_;
  SimulatedKernel kernel_;
  std::unique_ptr<testbed::Process> daemon_;
  std::string log_path_;
  std::chrono::milliseconds kernel_timeout_{0};
  uint32_t daemon_port_ = 0;
};

constexpr uint32_t kGmpBidirectional = 0x01 | 0x02 | 0x08 | 0x20;  // GMP|PRIMARY|BIDIRECTIONAL
constexpr uint32_t kPrimaryOutbound = 0x02 | 0x08;
constexpr uint32_t kPrimaryInbound = 0x02 | 0x10;

TEST_F(LsdOpenSm, ServiceIdAndQosClassRulesReachTheKernelsPaths) {
  start();
  auto iser = request(11, PathUse::kAll);
  iser.service_id = 0x0000000001060CBCULL;  // iSER: TCP port space, port 3260
  auto gold = request(12, PathUse::kAll);
  gold.qos_class = 7;
  auto plain = request(13, PathUse::kGmp);
  plain.tclass = 0x20;  // rdma_cm over IPv6 puts the TOS here
  auto ud = request(14, PathUse::kUnidirectional);
  ud.service_id = 0x0000000001060CBCULL;
  // All in flight at once.
  for (const auto& r : {iser, gold, plain, ud}) send(r);
  auto got = replies(4);
  ASSERT_EQ(got.size(), 4u) << log();

  const uint16_t lid1 = fabric_->lid("node001");
  const uint16_t lid2 = fabric_->lid("node002");
  // path_use ALL (rdma_cm on 6.1+): GMP, OUTBOUND (the same forward path), INBOUND (the
  // reverse path node002 -> node001 from a second SA query with the same Service-ID).
  const auto& i = got[11].first;
  ASSERT_FALSE(i.error) << log();
  ASSERT_EQ(i.paths.size(), 3u) << log();
  EXPECT_EQ(i.paths[0].flags, kGmpBidirectional);
  EXPECT_EQ(i.paths[1].flags, kPrimaryOutbound);
  EXPECT_EQ(i.paths[2].flags, kPrimaryInbound);
  EXPECT_EQ(i.paths[1].record, i.paths[0].record);
  const auto& in = i.paths[2].record;
  EXPECT_EQ(in.sgid, *iser.dgid);
  EXPECT_EQ(in.dgid, *iser.sgid);
  EXPECT_EQ(in.slid, lid2);
  EXPECT_EQ(in.dlid, lid1);
  EXPECT_EQ(in.sl, 3);
  EXPECT_EQ(in.service_id, *iser.service_id);
  EXPECT_EQ(i.paths[0].record.sl, 3);
  EXPECT_EQ(i.paths[0].record.rate, 5);
  EXPECT_EQ(i.paths[0].record.packet_life, 8);
  EXPECT_EQ(i.paths[0].record.sgid, *iser.sgid);
  EXPECT_EQ(i.paths[0].record.dgid, *iser.dgid);
  EXPECT_EQ(i.paths[0].record.slid, lid1);
  EXPECT_EQ(i.paths[0].record.dlid, lid2);

  const auto& g = got[12].first;
  ASSERT_FALSE(g.error);
  ASSERT_EQ(g.paths.size(), 3u);
  EXPECT_EQ(g.paths[0].record.sl, 5);
  // The reverse query carries the QoS class too: the INBOUND path is GOLD's as well.
  EXPECT_EQ(g.paths[2].flags, kPrimaryInbound);
  EXPECT_EQ(g.paths[2].record.sl, 5);
  EXPECT_EQ(g.paths[2].record.qos_class, 7);
  EXPECT_EQ(g.paths[2].record.slid, lid2);
  EXPECT_EQ(g.paths[2].record.dlid, lid1);
  EXPECT_EQ(g.paths[0].record.mtu, 3);
  EXPECT_EQ(g.paths[0].record.packet_life, 12);
  // The wire bytes: QoSClass 7 in bits 15:4 and SL 5 in bits 3:0 of PathRecord byte 52, at
  // nlmsghdr 16 + nlattr 4 + flags and reserved 8 + 52.
  const auto& raw = got[12].second;
  ASSERT_EQ(raw.size(), 16u + 3 * (4 + 8 + 64));
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(raw[16 + 76 * k + 12 + 52], 0x00) << k;
    EXPECT_EQ(raw[16 + 76 * k + 12 + 53], 0x75) << k;
  }

  const auto& p = got[13].first;
  ASSERT_FALSE(p.error);
  ASSERT_EQ(p.paths.size(), 1u);
  EXPECT_EQ(p.paths[0].flags, kGmpBidirectional);
  EXPECT_EQ(p.paths[0].record.sl, 0);
  // The SA decides the traffic class (OpenSM: its level's, 0 here); the kernel takes the SA's.
  EXPECT_EQ(p.paths[0].record.tclass, 0);

  const auto& u = got[14].first;
  ASSERT_FALSE(u.error);
  ASSERT_EQ(u.paths.size(), 1u);
  EXPECT_EQ(u.paths[0].flags, kPrimaryOutbound);
  EXPECT_EQ(u.paths[0].record.sl, 3);
}

TEST_F(LsdOpenSm, AsymmetricPolicyGivesTheInboundRecordItsOwnSl) {
  start();
  auto r = request(15, PathUse::kAll);
  r.qos_class = 9;  // only node001 -> node002 matches the rule
  send(r);
  auto got = replies(1);
  ASSERT_EQ(got.size(), 1u) << log();
  const auto& a = got[15].first;
  ASSERT_FALSE(a.error) << log();
  ASSERT_EQ(a.paths.size(), 3u) << log();
  EXPECT_EQ(a.paths[0].flags, kGmpBidirectional);
  EXPECT_EQ(a.paths[0].record.sl, 3);
  EXPECT_EQ(a.paths[1].flags, kPrimaryOutbound);
  EXPECT_EQ(a.paths[1].record.sl, 3);
  EXPECT_EQ(a.paths[2].flags, kPrimaryInbound);
  EXPECT_EQ(a.paths[2].record.sl, 0);
  EXPECT_EQ(a.paths[2].record.qos_class, 9);
  EXPECT_EQ(a.paths[2].record.slid, fabric_->lid("node002"));
  EXPECT_EQ(a.paths[2].record.dlid, fabric_->lid("node001"));
}

TEST_F(LsdOpenSm, SilentSaGetsFErrBeforeTheKernelsTimeoutAndLaterRequestsAreAnswered) {
  // Two attempts of 300 ms: F_ERR after 2 x 300 ms (+ backoffs), the kernel told to wait
  // 300 x 2 + 10 x 4 + 100 + 1000 = 1740 ms.
  start({"--sa-timeout-ms", "300", "--sa-retries", "1"});
  ASSERT_EQ(kernel_timeout_, 1740ms);
  auto before = request(41, PathUse::kUnidirectional);
  before.service_id = 0x0000000001060CBCULL;
  send(before);
  auto got = replies(1);
  ASSERT_FALSE(got[41].first.error) << log();

  // Frozen, OpenSM keeps its SA agent and ibsim still delivers the queries to it; none is
  // answered, so every attempt runs to its timeout (unlike an unroutable LID, which fails at
  // once). The guard thaws it whatever happens: the suite shares the fabric.
  const pid_t sm = testbed::process_named(fabric_->pids(), "opensm");
  ASSERT_GT(sm, 0) << "no OpenSM among the fabric's processes";
  struct Thaw {
    pid_t pid;
    ~Thaw() { kill(pid, SIGCONT); }
  } thaw{sm};
  ASSERT_EQ(kill(sm, SIGSTOP), 0);
  ASSERT_TRUE(testbed::wait_stopped(sm, 5s)) << "OpenSM did not stop";
  auto silent = request(42, PathUse::kAll);
  silent.service_id = 0x0000000001060CBCULL;
  auto sent = std::chrono::steady_clock::now();
  send(silent);
  got = replies(1);
  auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_EQ(got.size(), 1u) << log();
  EXPECT_TRUE(got[42].first.error);
  EXPECT_TRUE(got[42].first.paths.empty());
  EXPECT_GE(took, 600ms) << "F_ERR before both SA attempts timed out";
  EXPECT_LT(took, kernel_timeout_) << "F_ERR after the kernel gave up";
  EXPECT_NE(log().find("seq 42: F_ERR"), std::string::npos) << log();

  ASSERT_EQ(kill(sm, SIGCONT), 0);
  auto after = request(43, PathUse::kAll);
  after.service_id = 0x0000000001060CBCULL;
  send(after);
  got = replies(1);
  ASSERT_EQ(got.size(), 1u) << log();
  ASSERT_FALSE(got[43].first.error) << log();
  EXPECT_EQ(got[43].first.paths.at(0).record.sl, 3);
}

TEST_F(LsdOpenSm, UnroutableSaLidGetsFErrAtOnce) {
  // No port has LID 0x999: ibsim fails each send at once, and so the request gets F_ERR well
  // before its attempts could have timed out.
  start({"--sa-lid", "0x999", "--sa-timeout-ms", "300", "--sa-retries", "1"});
  auto r = request(21, PathUse::kAll);
  r.service_id = 0x0000000001060CBCULL;
  auto sent = std::chrono::steady_clock::now();
  send(r);
  auto got = replies(1);
  auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_EQ(got.size(), 1u) << log();
  EXPECT_TRUE(got[21].first.error);
  EXPECT_TRUE(got[21].first.paths.empty());
  EXPECT_LT(took, 300ms) << "as late as a timed-out attempt: the send did not fail at once";
  EXPECT_NE(log().find("F_ERR"), std::string::npos) << log();
}

TEST_F(LsdOpenSm, MalformedRequestsGetFErrAndGoodOnesStillTheirPath) {
  start();
  // path_use 7 and a QoS class wider than 12 bits: refused without asking the SA.
  auto bad_use = encode_resolve_request(request(31, PathUse::kAll));
  bad_use[16 + 65] = 7;
  kernel_.send_to(daemon_port_, bad_use);
  auto wide = request(32, PathUse::kAll);
  wide.qos_class = 0x1234;
  send(wide);
  kernel_.send_to(daemon_port_, std::vector<uint8_t>(7, 0xff));  // no header: no answer
  auto good = request(33, PathUse::kAll);
  good.qos_class = 7;
  send(good);
  auto got = replies(3);
  ASSERT_EQ(got.size(), 3u) << log();
  EXPECT_TRUE(got[31].first.error);
  EXPECT_TRUE(got[32].first.error);
  ASSERT_FALSE(got[33].first.error) << log();
  EXPECT_EQ(got[33].first.paths.at(0).record.sl, 5);
  EXPECT_TRUE(daemon_->running());
}

}  // namespace
}  // namespace rdmaqos::kmod
