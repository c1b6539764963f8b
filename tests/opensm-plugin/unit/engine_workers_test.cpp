// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's answer threads: a request that expands to many pairs leaves OpenSM's dispatcher
// thread (the engine returns kDeferred and sends the answer it would have sent inline, later,
// from its own thread); when every answer thread is taken and the queue is full, such a request
// is answered BUSY; a retry of a request still queued is dropped; named pairs stay inline.
#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/path_record.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

using testing::kActive;
using testing::port_info;

// One switch (LID 1) with `cas` CAs (LIDs 2..cas+1) at its ports 1..cas: an open GetTable looks
// at (cas + 1)^2 LID pairs, more than sad::kInlineWork from 32 CAs on.
constexpr int kCas = 40;

void feed_wide_subnet(FabricBuilder& b) {
  constexpr uint64_t kSwitch = 0x100;
  auto node_guid = [](int i) { return 0x1000 + 0x10 * static_cast<uint64_t>(i); };
  b.sm_port_guid(node_guid(0) + 1);
  const int s = b.node(kSwitch, 2, "switch S", kCas);
  b.port(s, 0, port_info(kSwitch, 1, kActive));
  b.pkey(s, 0, 0xFFFF);
  std::vector<uint8_t> lft = {0xFF, 0};
  for (int i = 0; i < kCas; ++i) {
    const auto out = static_cast<uint8_t>(i + 1);
    b.port(s, out, port_info(kSwitch, 0, kActive, node_guid(i), 1));
    for (uint8_t in = 0; in <= kCas; ++in)
      if (in != out) b.sl2vl(s, out, in, testing::kSl2Vl);
    lft.push_back(out);
    const int ca = b.node(node_guid(i), 1, "host " + std::to_string(i), 1);
    b.port(ca, 1, port_info(node_guid(i) + 1, static_cast<uint16_t>(i + 2), kActive, kSwitch, out));
    b.pkey(ca, 1, 0xFFFF);
    b.sl2vl(ca, 1, 0, testing::kSl2Vl);
  }
  b.lft(s, lft);
}

// A SubnAdmGetTable(PathRecord) naming no end, with TID `tid`: every path of the subnet.
std::vector<uint8_t> open_table(uint64_t tid) {
  sa::SaMad m;
  m.mad.method = sa::method::kGetTable;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = tid;
  auto bytes = sa::encode_path_record(sa::PathRecord{});
  m.data.assign(bytes->begin(), bytes->end());
  return sa::encode_sa_mad(m);
}

// A SubnAdmGet(PathRecord) from LID 2 to LID 3.
std::vector<uint8_t> named_pair() {
  sa::PathRecord q;
  q.slid = 2;
  q.dlid = 3;
  sa::SaMad m;
  m.mad.method = sa::method::kGet;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.mad.tid = 0x99;
  m.sa.comp_mask = sa::pr_mask::kSlid | sa::pr_mask::kDlid;
  auto bytes = sa::encode_path_record(q);
  m.data.assign(bytes->begin(), bytes->end());
  return sa::encode_sa_mad(m);
}

// Responses as the engine sends them, from whichever thread; a gate holds senders until opened.
class Inbox {
 public:
  Engine::Send sender(bool gated) {
    return [this, gated](std::span<const uint8_t> b) {
      std::unique_lock lock(mutex_);
      if (gated) {
        ++waiting_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return open_; });
      }
      received_.emplace_back(b.begin(), b.end());
      senders_.push_back(std::this_thread::get_id());
      changed_.notify_all();
    };
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits up to 10 s until `n` senders wait at the gate.
  bool wait_gated(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return waiting_ >= n; });
  }
  // Waits up to 10 s for `n` responses; then a copy of them.
  std::vector<std::vector<uint8_t>> wait_for(size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return received_.size() >= n; });
    return received_;
  }
  std::vector<std::thread::id> senders() {
    std::lock_guard lock(mutex_);
    return senders_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int waiting_ = 0;
  std::vector<std::vector<uint8_t>> received_;
  std::vector<std::thread::id> senders_;
};

class EngineWorkers : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> engine(size_t threads) {
    Options o;
    o.no_policy = true;  // partition SLs only: the answers need no policy file
    o.control_socket = "";
    o.answer_threads = threads;
    auto e = std::make_unique<Engine>(
        o, OsmConfig{}, [](bool, const std::string&) {},
        [](FabricBuilder& b) {
          feed_wide_subnet(b);
          return true;
        });
    e->start();
    EXPECT_TRUE(e->rebuild());
    return e;
  }

  // The answer computed on the calling thread (no answer threads).
  std::vector<uint8_t> inline_answer(const std::vector<uint8_t>& request) {
    auto e = engine(0);
    std::vector<uint8_t> sent;
    EXPECT_EQ(
        e->answer(
            request, 2, [&](std::span<const uint8_t> b) { sent.assign(b.begin(), b.end()); }, true),
        Engine::Outcome::kAnswered);
    return sent;
  }

  static uint64_t stat(const Engine& e, const char* name) {
    return e.stats()["workers"][name].get<uint64_t>();
  }
};

TEST_F(EngineWorkers, AnOpenTableIsAnsweredByAnAnswerThreadWithTheInlineAnswer) {
  const std::vector<uint8_t> expected = inline_answer(open_table(1));
  auto status = sa::decode_sa_mad(expected);
  ASSERT_TRUE(status);
  ASSERT_EQ(status->mad.status, 0);

  auto e = engine(1);
  Inbox inbox;
  EXPECT_EQ(e->answer(open_table(1), 2, inbox.sender(false), true), Engine::Outcome::kDeferred);
  auto got = inbox.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], expected);
  EXPECT_NE(inbox.senders().at(0), std::this_thread::get_id());
  EXPECT_EQ(stat(*e, "deferred"), 1u);
}

TEST_F(EngineWorkers, WithoutLeaveToDeferEverythingIsAnsweredInline) {
  auto e = engine(1);
  Inbox inbox;
  EXPECT_EQ(e->answer(open_table(1), 2, inbox.sender(false), false), Engine::Outcome::kAnswered);
  EXPECT_EQ(inbox.senders().at(0), std::this_thread::get_id());
  EXPECT_EQ(stat(*e, "deferred"), 0u);
}

TEST_F(EngineWorkers, ANamedPairStaysOnTheCallingThread) {
  auto e = engine(1);
  Inbox inbox;
  EXPECT_EQ(e->answer(named_pair(), 2, inbox.sender(false), true), Engine::Outcome::kAnswered);
  EXPECT_EQ(inbox.senders().at(0), std::this_thread::get_id());
}

TEST_F(EngineWorkers, AFullQueueAnswersBusyAndARetryOfAQueuedRequestIsDropped) {
  auto e = engine(1);
  Inbox inbox;
  // The first request holds the only answer thread at the gate.
  ASSERT_EQ(e->answer(open_table(1), 2, inbox.sender(true), true), Engine::Outcome::kDeferred);
  ASSERT_TRUE(inbox.wait_gated(1));
  // Four more wait (sad::kQueuedPerWorker per thread).
  for (uint64_t tid = 2; tid < 2 + sad::kQueuedPerWorker; ++tid)
    EXPECT_EQ(e->answer(open_table(tid), 2, inbox.sender(true), true), Engine::Outcome::kDeferred);
  // A retry of a waiting one: no second answer.
  EXPECT_EQ(e->answer(open_table(2), 2, inbox.sender(true), true), Engine::Outcome::kDropped);
  // One more: BUSY at once, from this thread.
  std::vector<uint8_t> busy;
  EXPECT_EQ(e->answer(
                open_table(9), 2,
                [&](std::span<const uint8_t> b) { busy.assign(b.begin(), b.end()); }, true),
            Engine::Outcome::kAnswered);
  auto busy_mad = sa::decode_sa_mad(busy);
  ASSERT_TRUE(busy_mad);
  EXPECT_EQ(busy_mad->mad.status, sa::status::kBusy);
  EXPECT_EQ(busy_mad->mad.tid, 9u);
  EXPECT_EQ(busy_mad->mad.method, sa::method::kGetTableResp);
  EXPECT_EQ(stat(*e, "busy"), 1u);

  inbox.open();
  auto got = inbox.wait_for(1 + sad::kQueuedPerWorker);
  EXPECT_EQ(got.size(), 1 + sad::kQueuedPerWorker);
  EXPECT_EQ(stat(*e, "deferred"), 1 + sad::kQueuedPerWorker);
}

TEST_F(EngineWorkers, DestroyingTheEngineWaitsForTheAnswerUnderWayAndDropsTheQueued) {
  Inbox inbox;
  {
    auto e = engine(1);
    ASSERT_EQ(e->answer(open_table(1), 2, inbox.sender(true), true), Engine::Outcome::kDeferred);
    ASSERT_TRUE(inbox.wait_gated(1));
    ASSERT_EQ(e->answer(open_table(2), 2, inbox.sender(true), true), Engine::Outcome::kDeferred);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      inbox.open();
    });
    e.reset();  // returns once the running answer was sent
    opener.join();
  }
  EXPECT_EQ(inbox.wait_for(1).size(), 1u);
}

}  // namespace
}  // namespace rdmaqos::osmp
