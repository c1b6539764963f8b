// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The window of SMP Gets (smp_window.h) on a fake wire that counts what is in flight: never more
// than the window outstanding, every Get answered in request order, lost ones sent again, and
// the MAD each Get goes out as.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <cstdint>
#include <deque>
#include <set>
#include <vector>

#include "rdma-qos/sa-responder/discovery.h"
#include "smp_window.h"

namespace rdmaqos::sad {
namespace {

uint64_t be(const SmpMad& mad, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v = v << 8 | mad[at + i];
  return v;
}

// Answers each Get in the order sent, `delay` receive calls after it went out, with its
// attribute modifier in the first data byte; drops the first send of the Gets in `lose`.
class CountingWire : public SmpWire {
 public:
  size_t delay = 3;
  std::set<uint32_t> lose;  // attribute modifiers whose first send is lost
  size_t in_flight = 0, most_in_flight = 0, sends = 0;
  std::vector<SmpMad> sent;

  bool send(const SmpGet& g, const SmpMad& mad) override {
    ++sends;
    sent.push_back(mad);
    if (lose.erase(g.mod) > 0) return true;  // lost on the way: never answered
    ++in_flight;
    most_in_flight = std::max(most_in_flight, in_flight);
    queue_.push_back({be(mad, 8, 8) & 0xFFFFFFFF, g.mod, delay});
    return true;
  }

  std::optional<SmpReply> receive(int) override {
    for (auto& q : queue_)
      if (q.wait > 0) --q.wait;
    if (queue_.empty() || queue_.front().wait > 0) return std::nullopt;
    const Queued q = queue_.front();
    queue_.pop_front();
    --in_flight;
    SmpReply r;
    r.tid = q.tid;
    r.data[0] = static_cast<uint8_t>(q.mod);
    return r;
  }

 private:
  struct Queued {
    uint64_t tid = 0;
    uint32_t mod = 0;
    size_t wait = 0;
  };
  std::deque<Queued> queue_;
};

std::vector<SmpGet> gets(size_t n) {
  std::vector<SmpGet> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].lid = static_cast<uint16_t>(1 + i % 7);
    out[i].attr = IB_ATTR_SLVL_TABLE;
    out[i].mod = static_cast<uint32_t>(i);
  }
  return out;
}

TEST(SmpWindow, NeverMoreOutstandingThanTheWindow) {
  for (size_t window : {1u, 4u, 32u}) {
    CountingWire wire;
    auto out = run_smp_window(wire, gets(200), {window, 1000, 1, 0});
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(wire.most_in_flight, window) << "window " << window;
    EXPECT_EQ(wire.sends, 200u);
  }
}

TEST(SmpWindow, AnswersComeBackInRequestOrder) {
  CountingWire wire;
  auto out = run_smp_window(wire, gets(50), {4, 1000, 1, 0});
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 50u);
  for (size_t i = 0; i < out->size(); ++i) {
    ASSERT_TRUE((*out)[i].has_value()) << i;
    EXPECT_EQ((*(*out)[i])[0], i);
  }
}

TEST(SmpWindow, ALostGetIsSentAgainWithinTheWindow) {
  CountingWire wire;
  wire.lose = {3, 17};
  int resent = 0;
  auto out = run_smp_window(wire, gets(40), {4, 20, 3, 0}, &resent);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(resent, 2);
  EXPECT_EQ(wire.sends, 42u);
  EXPECT_LE(wire.most_in_flight, 4u);
  EXPECT_TRUE((*out)[3].has_value());
  EXPECT_TRUE((*out)[17].has_value());
}

TEST(SmpWindow, AGetUnansweredAfterItsAttemptsIsMissing) {
  CountingWire wire;
  wire.lose = {5};
  auto out = run_smp_window(wire, gets(10), {4, 20, 1, 0});
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE((*out)[5].has_value());
  EXPECT_TRUE((*out)[6].has_value());
}

TEST(SmpWindow, DiscoveryKeepsOpenSmsDefaultBound) {
  // OpenSM's max_wire_smps default.
  EXPECT_EQ(DiscoveryOptions{}.smp_window, 4u);
}

TEST(SmpWindow, ALidRoutedGetCarriesItsAttributeTidAndMKey) {
  SmpGet g;
  g.lid = 12;
  g.attr = IB_ATTR_PORT_INFO;
  g.mod = 3;
  const SmpMad mad = encode_smp_get(g, 0x5a000007, 0x0123456789abcdefULL);
  EXPECT_EQ(mad[0], 1);     // base version
  EXPECT_EQ(mad[1], 0x01);  // LID-routed SMP
  EXPECT_EQ(mad[3], 0x01);  // Get
  EXPECT_EQ(be(mad, 8, 8), 0x5a000007u);
  EXPECT_EQ(be(mad, 16, 2), 0x0015u);
  EXPECT_EQ(be(mad, 20, 4), 3u);
  EXPECT_EQ(be(mad, 24, 8), 0x0123456789abcdefULL);
}

TEST(SmpWindow, ADirectedRouteGetCarriesItsPathAndMKey) {
  SmpGet g;
  g.directed = true;
  g.attr = IB_ATTR_NODE_INFO;
  g.path = {1, 7, 3};
  const SmpMad mad = encode_smp_get(g, 1, 0xfeed);
  EXPECT_EQ(mad[1], 0x81);  // directed route
  EXPECT_EQ(mad[7], 3);     // hop count
  EXPECT_EQ(be(mad, 24, 8), 0xfeedu);
  EXPECT_EQ(be(mad, 32, 2), 0xFFFFu);  // DrSLID permissive
  EXPECT_EQ(be(mad, 34, 2), 0xFFFFu);  // DrDLID permissive
  EXPECT_EQ(mad[129], 1);
  EXPECT_EQ(mad[130], 7);
  EXPECT_EQ(mad[131], 3);
}

}  // namespace
}  // namespace rdmaqos::sad
