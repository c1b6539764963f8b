// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The query engine through a scripted transport: windowing, retries, BUSY, timeouts,
// ClassPortInfo caching, and rejection of malformed or truncated answers.
#include <gtest/gtest.h>

#include <cerrno>
#include <thread>

#include "fake_transport.h"
#include "rdma-qos/sa-client/client.h"

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;
using testing::FakeTransport;
using testing::received;
using testing::response_to;

// n PathRecords with DLIDs 100, 101, ... in one GetTableResp, exactly as long as the kernel
// delivers a reassembled RMPP answer.
SaMad table_of(const SaMad& request, int n) {
  SaMad m = response_to(request, method::kGetTableResp);
  m.rmpp = {rmpp::kVersion,
            rmpp::kTypeData,
            0,
            rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast,
            0,
            1,
            static_cast<uint32_t>(20 + 64 * n)};
  m.sa.attr_offset = 8;
  for (int i = 0; i < n; ++i) {
    PathRecord r;
    r.dlid = static_cast<uint16_t>(100 + i);
    r.sl = 3;
    auto b = encode_path_record(r);
    m.data.insert(m.data.end(), b->begin(), b->end());
  }
  return m;
}

std::unique_ptr<Client> client_with(FakeTransport*& fake, FakeTransport::Handler handler,
                                    ClientOptions o = {}) {
  auto t = std::make_unique<FakeTransport>(std::move(handler));
  fake = t.get();
  if (!o.timeout) o.timeout = 5ms;
  o.backoff = 1ms;
  return std::make_unique<Client>(std::move(t), o);
}

PathQuery dlid_query(uint16_t dlid) {
  PathQuery q;
  q.record.dlid = dlid;
  q.record.slid = 2;
  q.comp_mask = pr_mask::kDlid | pr_mask::kSlid;
  return q;
}

TEST(Client, SendsGetTableToTheSmLid) {
  FakeTransport* fake;
  auto c = client_with(
      fake, [](const SaMad& r) { return std::vector<ReceivedMad>{received(table_of(r, 1))}; });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_TRUE(paths) << paths.error().message;
  ASSERT_EQ(fake->sent.size(), 1u);
  EXPECT_EQ(fake->sent[0].dlid, 1);
  EXPECT_EQ(fake->sent[0].mad.mad.method, method::kGetTable);
  EXPECT_EQ(fake->sent[0].mad.mad.attr_id, attr::kPathRecord);
  EXPECT_EQ(fake->sent[0].mad.sa.comp_mask, 0x30u);
  EXPECT_EQ(fake->sent[0].mad.data[41], 3);  // DLID low byte
}

TEST(Client, SaLidOverrideWins) {
  FakeTransport* fake;
  ClientOptions o;
  o.sa_lid = 77;
  auto c = client_with(
      fake, [](const SaMad& r) { return std::vector<ReceivedMad>{received(table_of(r, 1))}; }, o);
  ASSERT_TRUE(c->path_records(dlid_query(3)));
  EXPECT_EQ(fake->sent.at(0).dlid, 77);
}

TEST(Client, HalfAServiceIdMaskBecomesBothBits) {
  PathQuery q;
  q.record.service_id = 0x1060CBC;
  q.comp_mask = pr_mask::kServiceIdLsb;
  auto r = make_path_request(q);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->mad.sa.comp_mask, 0x3u);
}

TEST(Client, ReassembledTableYieldsEveryRecord) {
  FakeTransport* fake;
  auto c = client_with(
      fake, [](const SaMad& r) { return std::vector<ReceivedMad>{received(table_of(r, 10))}; });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_TRUE(paths) << paths.error().message;
  ASSERT_EQ(paths->size(), 10u);
  EXPECT_EQ(paths->front().dlid, 100);
  EXPECT_EQ(paths->back().dlid, 109);
  EXPECT_EQ(paths->back().sl, 3);
}

TEST(Client, KeepsAWindowOfRequestsOutstanding) {
  FakeTransport* fake;
  ClientOptions o;
  o.window = 16;
  o.timeout = 2000ms;  // answers come only once 16 are outstanding: one at a time would hang
  auto c = client_with(
      fake, [](const SaMad& r) { return std::vector<ReceivedMad>{received(table_of(r, 1))}; }, o);
  fake->release_at = 16;
  std::vector<PathQuery> queries;
  for (uint16_t i = 0; i < 32; ++i) queries.push_back(dlid_query(static_cast<uint16_t>(10 + i)));
  auto results = c->path_records(queries);
  ASSERT_EQ(results.size(), 32u);
  for (auto& r : results) EXPECT_TRUE(r) << r.error().message;
  EXPECT_EQ(fake->sent.size(), 32u);
  EXPECT_EQ(fake->max_outstanding, 16u);
}

TEST(Client, ResultsFollowQueryOrderWhateverTheAnswerOrder) {
  FakeTransport* fake;
  ClientOptions o;
  o.window = 4;
  o.timeout = 2000ms;
  auto c = client_with(
      fake,
      [](const SaMad& r) {
        SaMad m = table_of(r, 1);
        m.data[41] = r.data[41];  // echo the DLID asked for
        return std::vector<ReceivedMad>{received(m)};
      },
      o);
  fake->release_at = 4;
  std::vector<PathQuery> queries;
  for (uint16_t i = 0; i < 8; ++i) queries.push_back(dlid_query(static_cast<uint16_t>(20 + i)));
  auto results = c->path_records(queries);
  for (uint16_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(results[i]);
    EXPECT_EQ(results[i]->at(0).dlid, 20 + i);
  }
}

TEST(Client, BusyIsRetried) {
  FakeTransport* fake;
  int calls = 0;
  auto c = client_with(fake, [&calls](const SaMad& r) {
    if (calls++ == 0)
      return std::vector<ReceivedMad>{received(response_to(r, method::kGetTableResp, 0x0001))};
    return std::vector<ReceivedMad>{received(table_of(r, 1))};
  });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_TRUE(paths) << paths.error().message;
  EXPECT_EQ(fake->sent.size(), 2u);
  EXPECT_EQ(fake->sent[0].mad.mad.tid, fake->sent[1].mad.mad.tid);
}

TEST(Client, StaysBusyFailsWithTheStatus) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 2;
  auto c = client_with(
      fake,
      [](const SaMad& r) {
        return std::vector<ReceivedMad>{received(response_to(r, method::kGetTableResp, 0x0001))};
      },
      o);
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kMadStatus);
  EXPECT_EQ(paths.error().mad_status, 0x0001);
  EXPECT_EQ(fake->sent.size(), 3u);
}

TEST(Client, NoAnswerTimesOutAfterEveryRetry) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 2;
  o.timeout = 1ms;
  auto c = client_with(
      fake, [](const SaMad&) { return std::vector<ReceivedMad>{}; }, o);
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTimeout);
  EXPECT_NE(paths.error().message.find("3 attempt"), std::string::npos) << paths.error().message;
  EXPECT_EQ(fake->sent.size(), 3u);
}

TEST(Client, UmadTimeoutStatusCountsAsNoAnswer) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 1;
  auto c = client_with(
      fake,
      [](const SaMad& r) {
        return std::vector<ReceivedMad>{{ETIMEDOUT, encode_sa_mad(r)}};
      },
      o);
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(fake->sent.size(), 2u);
}

TEST(Client, SaStatusIsAnErrorNamingIt) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    return std::vector<ReceivedMad>{received(response_to(r, method::kGetTableResp, 0x0600))};
  });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kMadStatus);
  EXPECT_EQ(paths.error().mad_status, 0x0600);
  EXPECT_NE(paths.error().message.find("SA_INSUF_COMPS"), std::string::npos)
      << paths.error().message;
}

TEST(Client, TruncatedMadIsRejectedClearly) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    auto bytes = encode_sa_mad(table_of(r, 1));
    bytes.resize(40);  // cut inside the SA header
    return std::vector<ReceivedMad>{{0, bytes}};
  });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTruncated);
  EXPECT_NE(paths.error().message.find("malformed response"), std::string::npos)
      << paths.error().message;
  EXPECT_EQ(fake->sent.size(), 1u);  // rejected at once, not retried until timeout
}

TEST(Client, GetRespShorterThanARecordIsRejected) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    auto bytes = encode_sa_mad(response_to(r, method::kGetResp));
    bytes.resize(56 + 30);
    return std::vector<ReceivedMad>{{0, bytes}};
  });
  PathQuery q = dlid_query(3);
  q.get_table = false;
  auto paths = c->path_records(q);
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTruncated);
}

TEST(Client, AnswerForAnotherAttributeIsRejected) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    SaMad m = table_of(r, 1);
    m.mad.attr_id = attr::kClassPortInfo;
    return std::vector<ReceivedMad>{received(m)};
  });
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kMalformed);
}

SaMad cpi_response(const SaMad& r, bool qos, uint8_t resp_time_value) {
  SaMad m = response_to(r, method::kGetResp);
  ClassPortInfo c;
  c.base_version = 1;
  c.class_version = 2;
  c.capability_mask = 0x2602;
  c.capability_mask2 = qos ? 0xB5EA : 0xB5E8;
  c.resp_time_value = resp_time_value;
  m.data = *encode_class_port_info(c);
  return m;
}

TEST(Client, ClassPortInfoIsReadOncePerSa) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    return std::vector<ReceivedMad>{received(cpi_response(r, true, 18))};
  });
  auto q1 = c->qos_supported();
  auto q2 = c->qos_supported();
  ASSERT_TRUE(q1 && q2);
  EXPECT_TRUE(*q1);
  EXPECT_EQ(fake->sent.size(), 1u);
  EXPECT_EQ(fake->sent[0].mad.mad.method, method::kGet);
  EXPECT_EQ(fake->sent[0].mad.mad.attr_id, attr::kClassPortInfo);
}

TEST(Client, QosBitClearIsReported) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    return std::vector<ReceivedMad>{received(cpi_response(r, false, 18))};
  });
  auto q = c->qos_supported();
  ASSERT_TRUE(q);
  EXPECT_FALSE(*q);
}

TEST(Client, SmLidChangeRereadsClassPortInfo) {
  FakeTransport* fake;
  ClientOptions o;
  o.port_refresh = 0ms;
  auto c = client_with(
      fake,
      [](const SaMad& r) { return std::vector<ReceivedMad>{received(cpi_response(r, true, 18))}; },
      o);
  ASSERT_TRUE(c->qos_supported());
  EXPECT_EQ(c->sm_generation(), 0u);
  fake->next_sm_lid = 9;
  ASSERT_TRUE(c->qos_supported());
  EXPECT_EQ(c->sm_generation(), 1u);
  ASSERT_EQ(fake->sent.size(), 2u);
  EXPECT_EQ(fake->sent[1].dlid, 9);
}

// A silent SA: the first read waits timeout x (retries + 1); the failure is then kept, so the
// next callers (one per connection in the preload module) are answered at once.
TEST(Client, FailedClassPortInfoIsRememberedUntilTheRetryTime) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 1;
  o.class_port_info_retry_after = 1h;
  auto c = client_with(
      fake, [](const SaMad&) { return std::vector<ReceivedMad>{}; }, o);
  auto first = c->qos_supported();
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(fake->sent.size(), 2u);
  auto second = c->qos_supported();
  auto third = c->class_port_info();
  ASSERT_FALSE(second);
  ASSERT_FALSE(third);
  EXPECT_EQ(second.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(second.error().message, first.error().message);
  EXPECT_EQ(fake->sent.size(), 2u);  // nothing sent again
}

TEST(Client, FailedClassPortInfoIsAskedAgainAfterTheRetryTime) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 0;
  o.class_port_info_retry_after = 20ms;
  bool answer = false;
  auto c = client_with(
      fake,
      [&answer](const SaMad& r) {
        if (!answer) return std::vector<ReceivedMad>{};
        return std::vector<ReceivedMad>{received(cpi_response(r, true, 18))};
      },
      o);
  ASSERT_FALSE(c->qos_supported());
  answer = true;  // the SM came up
  std::this_thread::sleep_for(30ms);
  auto q = c->qos_supported();
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_TRUE(*q);
  EXPECT_EQ(fake->sent.size(), 2u);
}

TEST(Client, SmLidChangeForgetsAFailedClassPortInfo) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 0;
  o.port_refresh = 0ms;
  o.class_port_info_retry_after = 1h;
  auto c = client_with(
      fake,
      [](const SaMad& r) {
        return std::vector<ReceivedMad>{received(response_to(r, method::kGetResp, 0x000C))};
      },
      o);
  ASSERT_FALSE(c->qos_supported());
  ASSERT_FALSE(c->qos_supported());
  EXPECT_EQ(fake->sent.size(), 1u);
  fake->next_sm_lid = 9;  // a new SM: its SA is asked
  ASSERT_FALSE(c->qos_supported());
  ASSERT_EQ(fake->sent.size(), 2u);
  EXPECT_EQ(fake->sent[1].dlid, 9);
}

// The caller's deadline (rdma_resolve_route's timeout) cuts the retries short: 10 retries of
// 200 ms would take 2.2 s; the deadline ends the query after 30 ms with one attempt sent.
TEST(Client, DeadlineEndsTheQueryWhateverRetriesRemain) {
  FakeTransport* fake;
  ClientOptions o;
  o.retries = 10;
  o.timeout = 200ms;
  auto c = client_with(
      fake, [](const SaMad&) { return std::vector<ReceivedMad>{}; }, o);
  auto start = std::chrono::steady_clock::now();
  c->set_deadline(start + 30ms);
  auto paths = c->path_records(dlid_query(3));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTimeout);
  EXPECT_NE(paths.error().message.find("deadline"), std::string::npos) << paths.error().message;
  EXPECT_EQ(fake->sent.size(), 1u);
  EXPECT_GE(took, 30ms);
  EXPECT_LT(took, 200ms);
}

TEST(Client, NothingIsSentAfterTheDeadline) {
  FakeTransport* fake;
  auto c = client_with(
      fake, [](const SaMad& r) { return std::vector<ReceivedMad>{received(table_of(r, 1))}; });
  c->set_deadline(std::chrono::steady_clock::now() - 1ms);
  auto paths = c->path_records(dlid_query(3));
  ASSERT_FALSE(paths);
  EXPECT_EQ(paths.error().code, ErrorCode::kTimeout);
  EXPECT_TRUE(fake->sent.empty());
  c->set_deadline(std::nullopt);  // no bound again
  EXPECT_TRUE(c->path_records(dlid_query(3)));
}

TEST(Client, TimeoutComesFromRespTimeValue) {
  FakeTransport* fake;
  auto t = std::make_unique<FakeTransport>([](const SaMad& r) {
    if (r.mad.attr_id == attr::kClassPortInfo)
      return std::vector<ReceivedMad>{received(cpi_response(r, true, 16))};
    return std::vector<ReceivedMad>{received(table_of(r, 1))};
  });
  fake = t.get();
  Client c(std::move(t), ClientOptions{});
  ASSERT_TRUE(c.class_port_info());
  ASSERT_TRUE(c.path_records(dlid_query(3)));
  // 2 x 4.096 us x 2^16 = 536.9 ms
  EXPECT_EQ(fake->sent.at(1).response_timeout, 536ms);
}

TEST(Client, FirstQueryReadsClassPortInfoForItsTimeout) {
  FakeTransport* fake;
  auto t = std::make_unique<FakeTransport>([](const SaMad& r) {
    if (r.mad.attr_id == attr::kClassPortInfo)
      return std::vector<ReceivedMad>{received(cpi_response(r, true, 12))};
    return std::vector<ReceivedMad>{received(table_of(r, 1))};
  });
  fake = t.get();
  Client c(std::move(t), ClientOptions{});
  ASSERT_TRUE(c.path_records(dlid_query(3)));
  ASSERT_TRUE(c.path_records(dlid_query(4)));
  ASSERT_EQ(fake->sent.size(), 3u);  // ClassPortInfo once, then the two queries
  EXPECT_EQ(fake->sent[0].mad.mad.attr_id, attr::kClassPortInfo);
  // 2 x 4.096 us x 2^12 = 33.5 ms, raised to the 100 ms floor
  EXPECT_EQ(fake->sent[1].response_timeout, 100ms);
  EXPECT_EQ(fake->sent[2].mad.mad.attr_id, attr::kPathRecord);
}

TEST(Client, QueriesGoAheadWhenClassPortInfoIsRefused) {
  FakeTransport* fake;
  auto t = std::make_unique<FakeTransport>([](const SaMad& r) {
    if (r.mad.attr_id == attr::kClassPortInfo)
      return std::vector<ReceivedMad>{received(response_to(r, method::kGetResp, 0x000C))};
    return std::vector<ReceivedMad>{received(table_of(r, 1))};
  });
  fake = t.get();
  Client c(std::move(t), ClientOptions{});
  ASSERT_TRUE(c.path_records(dlid_query(3)));
  EXPECT_EQ(fake->sent.at(1).response_timeout, kBootstrapTimeout);
}

TEST(Client, MultiPathIsGetMultiRmppActiveWithGidCounts) {
  FakeTransport* fake;
  auto c = client_with(fake, [](const SaMad& r) {
    SaMad m = table_of(r, 2);
    m.mad.method = method::kGetMultiResp;
    return std::vector<ReceivedMad>{received(m)};
  });
  MultiPathQuery q;
  q.record.sgids = {make_gid(0xfe80000000000000, 2)};
  q.record.dgids = {make_gid(0xfe80000000000000, 3), make_gid(0xfe80000000000000, 4)};
  q.record.service_id = 0x1060CBC;
  q.comp_mask = mpr_mask::kServiceIdMsb;
  auto paths = c->multipath_records(q);
  ASSERT_TRUE(paths) << paths.error().message;
  EXPECT_EQ(paths->size(), 2u);
  const SaMad& sent = fake->sent.at(0).mad;
  EXPECT_EQ(sent.mad.method, method::kGetMulti);
  EXPECT_EQ(sent.mad.attr_id, attr::kMultiPathRecord);
  EXPECT_TRUE(sent.rmpp.active());
  EXPECT_EQ(sent.rmpp.payload_length, 20u + 24 + 3 * 16);
  EXPECT_EQ(sent.sa.comp_mask, 0x390000u);  // SID MSB+LSB, SGIDCount, DGIDCount
  EXPECT_EQ(sent.data[15], 1);
  EXPECT_EQ(sent.data[16], 2);
}

TEST(Client, MultiPathNeedsBothGidLists) {
  MultiPathQuery q;
  q.record.dgids = {make_gid(0xfe80000000000000, 3)};
  EXPECT_EQ(make_multipath_request(q).error().code, ErrorCode::kInvalidArgument);
}

// PathRecord components 0x3 (ServiceID), 0x4 DGID, 0x8 SGID, 0x800 Reversible, 0x1000 NumbPath,
// 0x2000 PKey, 0x4000 QoSClass become MultiPathRecord bits 16|21, GID lists, 5, 6, 7, 8.
TEST(MultiPathFromPathQuery, ConvertsComponentsAndGids) {
  PathQuery pq;
  pq.record.service_id = 0x1060CBC;
  pq.record.sgid = make_gid(0xfe80000000000000ULL, 1);
  pq.record.dgid = make_gid(0xfe80000000000000ULL, 2);
  pq.record.reversible = true;
  pq.record.numb_path = 1;
  pq.record.pkey = 0xFFFF;
  pq.record.qos_class = 7;
  pq.comp_mask = 0x3 | 0x4 | 0x8 | 0x800 | 0x1000 | 0x2000 | 0x4000;
  auto m = multipath_query_from(pq);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->comp_mask,
            (1ULL << 16) | (1ULL << 21) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) | (1ULL << 8));
  EXPECT_EQ(m->record.service_id, 0x1060CBCu);
  EXPECT_EQ(m->record.qos_class, 7);
  EXPECT_EQ(m->record.pkey, 0xFFFF);
  ASSERT_EQ(m->record.sgids.size(), 1u);
  ASSERT_EQ(m->record.dgids.size(), 1u);
  EXPECT_EQ(gid_guid(m->record.sgids[0]), 1u);
  EXPECT_EQ(gid_guid(m->record.dgids[0]), 2u);
}

TEST(MultiPathFromPathQuery, NeedsBothGidsAndRejectsLids) {
  PathQuery pq;
  pq.comp_mask = 0x4;  // DGID only
  EXPECT_EQ(multipath_query_from(pq).error().code, ErrorCode::kInvalidArgument);
  pq.comp_mask = 0x4 | 0x8 | 0x10;  // with DLID
  EXPECT_EQ(multipath_query_from(pq).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmaqos::sa
