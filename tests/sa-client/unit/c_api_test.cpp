// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C API over a client on a scripted transport: wire-layout paths in and out, errors with
// the MAD status name, argument checks.
#include <endian.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "fake_transport.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/sa_client.h"

extern "C" int rdma_qos_sa_c_header_is_plain_c(void);

namespace rdmaqos::sa {
namespace {

using namespace std::chrono_literals;

rdma_qos_sa_client* c_client(uint16_t status, int records) {
  auto t = std::make_unique<testing::FakeTransport>([=](const SaMad& r) {
    SaMad m = testing::response_to(r, method::kGetTableResp, status);
    m.sa.attr_offset = 8;
    for (int i = 0; i < records; ++i) {
      PathRecord p = *decode_path_record(r.data);  // echo the query ...
      p.sl = 3;                                    // ... with the SL the policy gives
      p.rate = 5;
      auto b = encode_path_record(p);
      m.data.insert(m.data.end(), b->begin(), b->end());
    }
    return std::vector<ReceivedMad>{testing::received(m)};
  });
  ClientOptions o;
  o.timeout = 5ms;
  return wrap_c_client(std::make_unique<Client>(std::move(t), o));
}

TEST(CApi, HeaderIsPlainC) {
  EXPECT_EQ(rdma_qos_sa_c_header_is_plain_c(), 1);
}

TEST(CApi, PathQueryReturnsWireLayoutRecords) {
  rdma_qos_sa_client* c = c_client(0, 2);
  ibv_path_record q{};
  q.service_id = htobe64(0x1060CBC);
  q.dlid = htobe16(3);
  ibv_path_record out[4]{};
  rdma_qos_sa_error err{};
  int n = rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_SERVICE_ID | RDMA_QOS_PR_COMP_DLID, out, 4,
                                 &err);
  EXPECT_EQ(n, 2) << err.message;
  EXPECT_EQ(err.code, RDMA_QOS_SA_OK);
  EXPECT_EQ(be64toh(out[0].service_id), 0x1060CBCu);
  EXPECT_EQ(be16toh(out[0].dlid), 3);
  EXPECT_EQ(be16toh(out[0].qosclass_sl) & 0xF, 3);
  EXPECT_EQ(out[1].rate & 0x3F, 5);
  rdma_qos_sa_close(c);
}

// rdma_qos_sa_set_thread_deadline bounds this thread's calls: a silent SA with 10 retries of
// 200 ms gives up after the 30 ms budget; 0 removes the bound.
TEST(CApi, ThreadDeadlineBoundsTheCallsOfThisThread) {
  auto t = std::make_unique<testing::FakeTransport>(
      [](const SaMad&) { return std::vector<ReceivedMad>{}; });
  auto* fake = t.get();
  ClientOptions o;
  o.timeout = 200ms;
  o.retries = 10;
  o.backoff = 1ms;
  rdma_qos_sa_client* c = wrap_c_client(std::make_unique<Client>(std::move(t), o));
  ibv_path_record q{};
  ibv_path_record out[1]{};
  rdma_qos_sa_error err{};
  auto start = std::chrono::steady_clock::now();
  rdma_qos_sa_set_thread_deadline(30);
  EXPECT_EQ(rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_DLID, out, 1, &err), -1);
  auto took = std::chrono::steady_clock::now() - start;
  rdma_qos_sa_set_thread_deadline(0);
  EXPECT_EQ(err.code, RDMA_QOS_SA_TIMEOUT);
  EXPECT_LT(took, 200ms);
  EXPECT_EQ(fake->sent.size(), 1u);
  rdma_qos_sa_close(c);
}

// fork() while another thread's query holds the handle's lock: the child has the lock held by
// a thread it does not have, and shares the umad file with the parent. Its calls on the
// parent's handle, with no deadline of its own, fail at once instead of waiting for ever, and
// closing the handle there leaves the parent's umad agent alone.
TEST(CApi, AChildAfterForkNeverWaitsOnItsParentsHandle) {
  std::atomic<bool> inside{false}, release{false};
  auto t = std::make_unique<testing::FakeTransport>([&](const SaMad&) {
    inside = true;
    while (!release) std::this_thread::sleep_for(1ms);
    return std::vector<ReceivedMad>{};
  });
  ClientOptions o;
  o.timeout = 5ms;
  o.retries = 0;
  rdma_qos_sa_client* c = wrap_c_client(std::make_unique<Client>(std::move(t), o));
  ibv_path_record q{};
  std::thread holder([&] {
    ibv_path_record out[1]{};
    rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_DLID, out, 1, nullptr);
  });
  while (!inside) std::this_thread::sleep_for(1ms);
  const pid_t child = fork();
  if (child == 0) {
    ibv_path_record out[1]{};
    rdma_qos_sa_error err{};
    const int n = rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_DLID, out, 1, &err);
    const int qos = rdma_qos_sa_qos_supported(c, nullptr);
    rdma_qos_sa_close(c);
    _exit(n == -1 && qos == -1 && err.code == RDMA_QOS_SA_TRANSPORT &&
                  std::strstr(err.message, "fork") != nullptr
              ? 0
              : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 500 && done == 0; ++i) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(10ms);
  }
  const bool ended = done == child;
  if (!ended) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  release = true;
  holder.join();
  rdma_qos_sa_close(c);
  ASSERT_TRUE(ended) << "the child waited for its parent's lock";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(CApi, CountsPathsBeyondTheBuffer) {
  rdma_qos_sa_client* c = c_client(0, 3);
  ibv_path_record q{};
  ibv_path_record out[1]{};
  EXPECT_EQ(rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_DLID, out, 1, nullptr), 3);
  rdma_qos_sa_close(c);
}

TEST(CApi, SaStatusComesBackWithItsName) {
  rdma_qos_sa_client* c = c_client(0x0300, 0);
  ibv_path_record q{};
  ibv_path_record out[1]{};
  rdma_qos_sa_error err{};
  EXPECT_EQ(rdma_qos_sa_path_query(c, &q, RDMA_QOS_PR_COMP_DLID, out, 1, &err), -1);
  EXPECT_EQ(err.code, RDMA_QOS_SA_MAD_STATUS);
  EXPECT_EQ(err.mad_status, 0x0300);
  EXPECT_NE(std::strstr(err.message, "SA_NO_RECORDS"), nullptr) << err.message;
  rdma_qos_sa_close(c);
}

TEST(CApi, NullArgumentsAreRejected) {
  rdma_qos_sa_error err{};
  ibv_path_record q{};
  EXPECT_EQ(rdma_qos_sa_path_query(nullptr, &q, 0, nullptr, 0, &err), -1);
  EXPECT_EQ(err.code, RDMA_QOS_SA_INVALID_ARGUMENT);
  err = {};
  EXPECT_EQ(rdma_qos_sa_qos_supported(nullptr, &err), -1);
  EXPECT_EQ(err.code, RDMA_QOS_SA_INVALID_ARGUMENT);
  err = {};
  EXPECT_EQ(rdma_qos_sa_mpr_supported(nullptr, &err), -1);
  EXPECT_EQ(err.code, RDMA_QOS_SA_INVALID_ARGUMENT);
  EXPECT_EQ(rdma_qos_sa_multipath_query(nullptr, &q, 0, nullptr, 0, &err), -1);
}

TEST(CApi, StatusNamesFitTheBuffer) {
  char buf[8];
  EXPECT_STREQ(rdma_qos_sa_mad_status_name(0x0600, buf, sizeof buf), "SA_INSU");
  char big[64];
  EXPECT_STREQ(rdma_qos_sa_mad_status_name(0x0001, big, sizeof big), "BUSY");
}

}  // namespace
}  // namespace rdmaqos::sa
