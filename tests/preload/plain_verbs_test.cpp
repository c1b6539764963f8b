// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plain-verbs decision and its cache with a stand-in SA: what the query carries, that one
// query serves every QP to a destination, that any failure leaves QPs stock, and that only a
// level with a rate-limit paces a QP once the interposer core applies the decision.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "fake_plain_verbs_sa.h"
#include "fake_verbs_host.h"
#include "plain_verbs.h"
#include "rdma-qos/providers/verbs_interposer.h"

namespace rdmaqos::preload {
namespace {

using providers::LinkKind;

constexpr uint16_t kSlid = 1;
constexpr uint16_t kDlid = 3;

// The provider behind the interposer core: what each ibv_modify_qp got.
std::vector<ibv_qp_attr>& provider_calls() {
  static std::vector<ibv_qp_attr> calls;
  return calls;
}

int stand_in_modify_qp(ibv_qp*, ibv_qp_attr* attr, int) {
  provider_calls().push_back(*attr);
  return 0;
}

int stand_in_destroy_qp(ibv_qp*) {
  return 0;
}

class PlainVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.settings = &settings_;
    options_.ttl = std::chrono::hours(1);  // no expiry during a test
    answer_.sl = 5;
    answer_.mtu = IBV_MTU_2048;
    answer_.rate = IBV_RATE_40_GBPS;
    answer_.packet_life = 10;
  }

  std::unique_ptr<FakePlainVerbsSa> ops() {
    auto o = std::make_unique<FakePlainVerbsSa>();
    o->on_qos_supported = [this](const PlainVerbsInputs&, sa::Deadline) -> rdmaqos::Result<bool> {
      if (sa_fails_) return rdmaqos::make_error(rdmaqos::ErrorCode::kTimeout, "no answer");
      return sa_has_qos_;
    };
    o->on_path_query = [this](const PlainVerbsInputs&, const sa::PathQuery& q,
                              sa::Deadline) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
      queries_.push_back(q);
      return std::vector<sa::PathRecord>{answer_};
    };
    o->on_log_once = [this](const std::string& key, const std::string&) { logs_.push_back(key); };
    return o;
  }

  static PlainVerbsInputs ib(std::optional<uint16_t> qos_class = 7, uint16_t dlid = kDlid) {
    PlainVerbsInputs in;
    in.device = "mlx5_0";
    in.port = 1;
    in.link = LinkKind::kInfiniBand;
    in.slid = kSlid;
    in.dlid = dlid;
    in.pkey = 0xFFFF;
    in.qos_class = qos_class;
    return in;
  }

  // What a QP whose level `d` decides for `in` gets through the interposer core, connected as an
  // MPI stack does (RTR to kDlid, then RTS): the static rate of the address vector the provider
  // got at RTR, and the packet-pacing limits the device was asked for (kbit/s).
  struct Connected {
    uint8_t static_rate = 0;
    std::vector<uint32_t> paced_kbps;
  };
  static Connected connect(PlainVerbsDecider& d, const PlainVerbsInputs& in) {
    Connected out;
    providers::FakeVerbsHost hooks;
    hooks.on_link_kind = [&in](ibv_context*, uint8_t, uint8_t) { return in.link; };
    hooks.on_qp_port = [](ibv_qp*) -> uint8_t { return 1; };
    hooks.on_plain_verbs = [&](const providers::PlainVerbsTarget&) { return d.decide(in); };
    hooks.on_rate_limit = [&out](ibv_qp*, uint32_t kbps) {
      out.paced_kbps.push_back(kbps);
      return 0;
    };
    provider_calls().clear();
    ibv_qp qp{};
    qp.qp_num = 0x123;
    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = IBV_MTU_4096;
    rtr.dest_qp_num = 0x456;
    rtr.ah_attr.dlid = kDlid;
    rtr.ah_attr.port_num = 1;
    rtr.ah_attr.is_global = in.link == LinkKind::kInfiniBand ? 0 : 1;
    EXPECT_EQ(
        providers::interpose_modify_qp(
            &qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
            &stand_in_modify_qp, hooks),
        0);
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = 14;
    EXPECT_EQ(
        providers::interpose_modify_qp(&qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
                                       &stand_in_modify_qp, hooks),
        0);
    providers::interpose_destroy_qp(&qp, &stand_in_destroy_qp);
    if (!provider_calls().empty()) out.static_rate = provider_calls().front().ah_attr.static_rate;
    return out;
  }

  // A host policy for RoCE: QoS-Class 7 gets RATED (SL 3, rate-limit 40 Gb/s), 8 gets UNRATED
  // (SL 4, no rate-limit).
  void load_rated_policy() {
    auto p = rdmacm::load_host_policy(R"(
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: RATED
    sl: 3
    rate-limit: 7
  end-qos-level
  qos-level
    name: UNRATED
    sl: 4
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    qos-class: 7
    qos-level-name: RATED
  end-qos-match-rule
  qos-match-rule
    qos-class: 8
    qos-level-name: UNRATED
  end-qos-match-rule
end-qos-match-rules
)",
                                      "rated.conf");
    ASSERT_TRUE(p.policy) << (p.messages.empty() ? "" : p.messages[0]);
    settings_.policy = p.policy;
  }

  rdmacm::CmSettings settings_;
  PlainVerbsOptions options_;
  sa::PathRecord answer_;
  bool sa_has_qos_ = true;
  bool sa_fails_ = false;
  std::vector<sa::PathQuery> queries_;
  std::vector<std::string> logs_;
};

TEST_F(PlainVerbs, WithoutClassOrServiceIdTheQpStaysStockAndTheSaIsNotAsked) {
  PlainVerbsDecider d(options_, ops());
  EXPECT_FALSE(d.decide(ib(std::nullopt)));
  EXPECT_TRUE(queries_.empty());
}

TEST_F(PlainVerbs, InfiniBandAsksTheSaForThePathWithTheClass) {
  PlainVerbsDecider d(options_, ops());
  auto in = ib(7);
  in.pkey = 0x8001;
  ASSERT_TRUE(d.decide(in));
  ASSERT_EQ(queries_.size(), 1u);
  const sa::PathQuery& q = queries_[0];
  namespace m = sa::pr_mask;
  EXPECT_EQ(q.comp_mask,
            m::kSlid | m::kDlid | m::kReversible | m::kNumbPath | m::kPKey | m::kQosClass);
  EXPECT_EQ(q.record.slid, kSlid);
  EXPECT_EQ(q.record.dlid, kDlid);
  EXPECT_EQ(q.record.pkey, 0x8001);
  EXPECT_EQ(q.record.qos_class, 7);
  EXPECT_TRUE(q.record.reversible);
  EXPECT_EQ(q.record.numb_path, 1);
}

TEST_F(PlainVerbs, TheSasAnswerIsTheLevel) {
  PlainVerbsDecider d(options_, ops());
  auto level = d.decide(ib());
  ASSERT_TRUE(level);
  EXPECT_EQ(level->sl, 5);
  EXPECT_EQ(level->path_mtu, IBV_MTU_2048);
  EXPECT_EQ(level->static_rate, IBV_RATE_40_GBPS);
  EXPECT_FALSE(level->pace);          // the path's rate, not known to be a level's rate-limit
  EXPECT_EQ(level->ack_timeout, 11);  // packet lifetime 10 + 1
  EXPECT_FALSE(level->traffic_class);
}

TEST_F(PlainVerbs, TheClassIsNotSentToAnSaWithoutQos) {
  sa_has_qos_ = false;
  PlainVerbsDecider d(options_, ops());
  ASSERT_TRUE(d.decide(ib(7)));
  ASSERT_EQ(queries_.size(), 1u);
  EXPECT_EQ(queries_[0].comp_mask & sa::pr_mask::kQosClass, 0u);
}

TEST_F(PlainVerbs, TheServiceIdIsSentWhenTheProgramHasOne) {
  PlainVerbsDecider d(options_, ops());
  auto in = ib(std::nullopt);
  in.service_id = 0x1060CBC;
  ASSERT_TRUE(d.decide(in));
  ASSERT_EQ(queries_.size(), 1u);
  EXPECT_EQ(queries_[0].comp_mask & sa::pr_mask::kServiceId, sa::pr_mask::kServiceId);
  EXPECT_EQ(queries_[0].record.service_id, 0x1060CBCu);
}

TEST_F(PlainVerbs, UnknownPkeyIsNotSent) {
  PlainVerbsDecider d(options_, ops());
  auto in = ib();
  in.pkey.reset();
  ASSERT_TRUE(d.decide(in));
  EXPECT_EQ(queries_.at(0).comp_mask & sa::pr_mask::kPKey, 0u);
}

TEST_F(PlainVerbs, AThousandQpsToOnePeerCostOneQuery) {
  PlainVerbsDecider d(options_, ops());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(d.decide(ib())->sl, 5);
  EXPECT_EQ(queries_.size(), 1u);
}

TEST_F(PlainVerbs, QpsReachingRtrTogetherShareOneQuery) {
  // Whichever thread asks first, the others either wait for its answer or find it cached: the
  // count does not depend on timing (the wait is far longer than any scheduling delay).
  options_.wait = std::chrono::minutes(5);
  std::atomic<int> asked{0};
  auto o = ops();
  o->on_path_query = [&](const PlainVerbsInputs&, const sa::PathQuery&,
                         sa::Deadline) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
    ++asked;
    std::this_thread::yield();
    return std::vector<sa::PathRecord>{answer_};
  };
  PlainVerbsDecider d(options_, std::move(o));
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::atomic<int> got_level{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      auto level = d.decide(ib());
      if (level && level->sl == 5) ++got_level;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(asked.load(), 1);
  EXPECT_EQ(got_level.load(), kThreads);
}

TEST_F(PlainVerbs, EachDestinationClassAndPkeyIsAskedOnce) {
  PlainVerbsDecider d(options_, ops());
  auto other_pkey = ib();
  other_pkey.pkey = 0x8001;
  auto other_port = ib();
  other_port.port = 2;
  for (int round = 0; round < 2; ++round) {
    d.decide(ib(7, 3));
    d.decide(ib(7, 4));
    d.decide(ib(8, 3));
    d.decide(other_pkey);
    d.decide(other_port);
  }
  EXPECT_EQ(queries_.size(), 5u);
}

TEST_F(PlainVerbs, WithoutACacheLifetimeEveryQpAsks) {
  options_.ttl = std::chrono::milliseconds(0);
  PlainVerbsDecider d(options_, ops());
  d.decide(ib());
  d.decide(ib());
  EXPECT_EQ(queries_.size(), 2u);
}

TEST_F(PlainVerbs, AnSaFailureLeavesTheQpStockLogsOnceAndIsRemembered) {
  sa_fails_ = true;
  PlainVerbsDecider d(options_, ops());
  EXPECT_FALSE(d.decide(ib()));
  EXPECT_FALSE(d.decide(ib()));
  EXPECT_TRUE(queries_.empty());
  ASSERT_EQ(logs_.size(), 1u);  // the second QP found the remembered failure
  EXPECT_EQ(logs_[0], "verbs_sa:no answer");
}

TEST_F(PlainVerbs, AnEmptyAnswerLeavesTheQpStock) {
  auto o = ops();
  o->on_path_query = [](const PlainVerbsInputs&, const sa::PathQuery&,
                        sa::Deadline) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
    return std::vector<sa::PathRecord>{};
  };
  PlainVerbsDecider d(options_, std::move(o));
  EXPECT_FALSE(d.decide(ib()));
}

TEST_F(PlainVerbs, AThrowingSaClientLeavesTheQpStock) {
  auto o = ops();
  o->on_path_query = [](const PlainVerbsInputs&, const sa::PathQuery&,
                        sa::Deadline) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
    throw std::runtime_error("broken");
  };
  PlainVerbsDecider d(options_, std::move(o));
  EXPECT_FALSE(d.decide(ib()));
  EXPECT_EQ(logs_, std::vector<std::string>{"verbs_sa_exception"});
}

TEST_F(PlainVerbs, SaOffNeverAsks) {
  options_.query_sa = false;
  PlainVerbsDecider d(options_, ops());
  EXPECT_FALSE(d.decide(ib()));
  EXPECT_TRUE(queries_.empty());
}

TEST_F(PlainVerbs, WithoutADestinationLidTheSaIsNotAsked) {
  PlainVerbsDecider d(options_, ops());
  EXPECT_FALSE(d.decide(ib(7, 0)));
  EXPECT_TRUE(queries_.empty());
  EXPECT_EQ(logs_, std::vector<std::string>{"verbs_no_lid"});
}

TEST_F(PlainVerbs, OnRoceTheHostPolicyDecidesWithoutTheSa) {
  auto p = rdmacm::load_host_policy(R"(
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: MPI
    sl: 3
    mtu-limit: 3
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    qos-class: 7
    qos-level-name: MPI
  end-qos-match-rule
end-qos-match-rules
)",
                                    "test.conf");
  ASSERT_TRUE(p.policy) << (p.messages.empty() ? "" : p.messages[0]);
  settings_.policy = p.policy;
  settings_.sl2tclass[3] = 104;
  PlainVerbsDecider d(options_, ops());
  auto in = ib(7);
  in.link = LinkKind::kRoceV2;
  auto level = d.decide(in);
  ASSERT_TRUE(level);
  EXPECT_EQ(level->sl, 3);
  EXPECT_EQ(level->traffic_class, 104);
  EXPECT_EQ(level->path_mtu, IBV_MTU_1024);
  EXPECT_TRUE(queries_.empty());
  in.qos_class = 8;  // no rule for it: the DEFAULT level
  auto other = d.decide(in);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->sl, 0);
  EXPECT_FALSE(other->traffic_class);
}

// The SA's PathRecord carries one rate, the path's (lowered to the level's rate-limit when the
// level has one): it goes into the address vector, as the kernel puts a PathRecord's rate there,
// and no QP takes an entry of the device's pacing table for it.
TEST_F(PlainVerbs, AnInfiniBandPathsRateIsTheStaticRateAndNoQpIsPaced) {
  PlainVerbsDecider d(options_, ops());
  Connected c = connect(d, ib());
  EXPECT_EQ(c.static_rate, IBV_RATE_40_GBPS);
  EXPECT_EQ(c.paced_kbps, std::vector<uint32_t>{});
}

TEST_F(PlainVerbs, OnRoceALevelWithARateLimitPacesTheQpAtIt) {
  load_rated_policy();
  PlainVerbsDecider d(options_, ops());
  auto in = ib(7);
  in.link = LinkKind::kRoceV2;
  Connected c = connect(d, in);
  EXPECT_EQ(c.static_rate, IBV_RATE_40_GBPS);
  EXPECT_EQ(c.paced_kbps, std::vector<uint32_t>{40000000u});
}

TEST_F(PlainVerbs, OnRoceALevelWithoutARateLimitLeavesTheRateAlone) {
  load_rated_policy();
  PlainVerbsDecider d(options_, ops());
  auto in = ib(8);
  in.link = LinkKind::kRoceV2;
  Connected c = connect(d, in);
  EXPECT_EQ(c.static_rate, 0);
  EXPECT_EQ(c.paced_kbps, std::vector<uint32_t>{});
}

TEST_F(PlainVerbs, AnUnknownLinkStaysStock) {
  PlainVerbsDecider d(options_, ops());
  auto in = ib();
  in.link = LinkKind::kUnknown;
  EXPECT_FALSE(d.decide(in));
  EXPECT_TRUE(queries_.empty());
}

}  // namespace
}  // namespace rdmaqos::preload
