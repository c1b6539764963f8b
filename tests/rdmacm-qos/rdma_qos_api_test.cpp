// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The public C API (rdma_qos.h): overrides per id, the decision query, errors through errno.
#include "rdma-qos/rdmacm-qos/rdma_qos.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace {

rdma_cm_id* fake_id(int& storage) {
  return reinterpret_cast<rdma_cm_id*>(&storage);
}

TEST(RdmaQosApi, ClassOverrideRoundTrips) {
  int storage = 0;
  rdma_cm_id* id = fake_id(storage);
  uint16_t c = 0;
  errno = 0;
  EXPECT_EQ(rdma_qos_get_class(id, &c), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(rdma_qos_set_class(id, 0x20), 0);
  EXPECT_EQ(rdma_qos_get_class(id, &c), 0);
  EXPECT_EQ(c, 0x20);
  rdmaqos::rdmacm::IdRegistry::instance().erase(id);
}

TEST(RdmaQosApi, ClassAbove12BitsIsInvalid) {
  int storage = 0;
  errno = 0;
  EXPECT_EQ(rdma_qos_set_class(fake_id(storage), 0x1000), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(RdmaQosApi, ServiceIdOverrideRoundTrips) {
  int storage = 0;
  rdma_cm_id* id = fake_id(storage);
  uint64_t sid = 0;
  EXPECT_EQ(rdma_qos_set_service_id(id, 0x0000000001060CBCULL), 0);
  EXPECT_EQ(rdma_qos_get_service_id(id, &sid), 0);
  EXPECT_EQ(sid, 0x0000000001060CBCULL);
  rdmaqos::rdmacm::IdRegistry::instance().erase(id);
}

TEST(RdmaQosApi, NullArgumentsAreInvalid) {
  uint16_t c;
  errno = 0;
  EXPECT_EQ(rdma_qos_set_class(nullptr, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_qos_get_class(nullptr, &c), -1);
  EXPECT_EQ(rdma_qos_query(nullptr, nullptr), -1);
}

TEST(RdmaQosApi, QueryReportsTheDecision) {
  int storage = 0;
  rdma_cm_id* id = fake_id(storage);
  rdma_qos_decision d;
  errno = 0;
  EXPECT_EQ(rdma_qos_query(id, &d), -1);
  EXPECT_EQ(errno, ENOENT);
  rdmaqos::rdmacm::CmDecision cd;
  cd.service_id = 0x1061D27;
  cd.qos_class = 32;
  cd.sl = 3;
  cd.traffic_class = 104;
  cd.mtu_limit = 3;
  cd.rule = 1;
  cd.level = "RPING";
  rdmaqos::rdmacm::IdRegistry::instance().set_decision(id, cd);
  ASSERT_EQ(rdma_qos_query(id, &d), 0);
  EXPECT_EQ(d.service_id, 0x1061D27ULL);
  EXPECT_EQ(d.has_qos_class, 1);
  EXPECT_EQ(d.qos_class, 32);
  EXPECT_EQ(d.sl, 3);
  EXPECT_EQ(d.has_traffic_class, 1);
  EXPECT_EQ(d.traffic_class, 104);
  EXPECT_EQ(d.has_mtu_limit, 1);
  EXPECT_EQ(d.mtu_limit, 3);
  EXPECT_EQ(d.has_rate_limit, 0);
  EXPECT_EQ(d.rule, 1);
  EXPECT_STREQ(d.level, "RPING");
  rdmaqos::rdmacm::IdRegistry::instance().erase(id);
}

TEST(RdmaQosApi, VersionIsTheProjects) {
  EXPECT_STREQ(rdma_qos_version(), RDMA_QOS_EXPECTED_VERSION);
  EXPECT_EQ(RDMA_QOS_API_VERSION, 1);
}

}  // namespace
