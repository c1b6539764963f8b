// The rdma_cm layer's InfiniBand query against the real OpenSM on ibsim: the Service-ID and the
// QoS-Class it sends select the policy's levels, and the answer is what it would install.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "rdma-qos/testbed/ib_fabric.h"

namespace {

using nlohmann::json;
using rdmaqos::testbed::IbFabric;

constexpr const char* kPolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: ISER
    sl: 3
  end-qos-level
  qos-level
    name: GOLD
    sl: 5
    mtu-limit: 3
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    qos-class: 7
    qos-level-name: GOLD
  end-qos-match-rule
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: ISER
  end-qos-match-rule
end-qos-match-rules
)";

class IbRouteOpenSm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto o = rdmaqos::testbed::fabric_options(rdmaqos::testbed::make_fat_tree({}));
    o.policy = kPolicy;
    fabric_ = new IbFabric(o);
  }
  static void TearDownTestSuite() {
    delete fabric_;
    fabric_ = nullptr;
  }
  static json probe(const std::string& sid, const std::string& qos_class = "", bool mpr = false) {
    const auto& topo = fabric_->topology();
    std::vector<std::string> argv = {RDMA_QOS_IB_ROUTE_PROBE};
    if (mpr) argv.push_back("--mpr");
    argv.insert(argv.end(), {std::to_string(topo.node("node001").port_guid),
                             std::to_string(topo.node("node002").port_guid), sid});
    if (!qos_class.empty()) argv.push_back(qos_class);
    auto r = fabric_->run_at("node001", argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto j = json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    return j;
  }
  static IbFabric* fabric_;
};
IbFabric* IbRouteOpenSm::fabric_ = nullptr;

TEST_F(IbRouteOpenSm, ServiceIdSelectsItsLevel) {
  json j = probe("0x1060CBC");
  EXPECT_EQ(j.value("count", -1), 1);
  EXPECT_EQ(j.value("sl", -1), 3);
  EXPECT_EQ(j.value("flags", 0u), 0x2Bu);
}

TEST_F(IbRouteOpenSm, QosClassIsSentWhenTheSaAdvertisesQos) {
  json j = probe("0x1060CBC", "7");
  EXPECT_EQ(j.value("qos_supported", -1), 1);
  EXPECT_EQ(j.value("comp_mask", 0ULL) & 0x4000ULL, 0x4000ULL);
  // The answer carries QoS-Class 0 (OpenSM does not echo it): GOLD's SL shows it was matched.
  EXPECT_EQ(j.value("sl", -1), 5);   // the qos-class rule comes first
  EXPECT_EQ(j.value("mtu", -1), 3);  // GOLD's mtu-limit: 1024
}

TEST_F(IbRouteOpenSm, UnmatchedServiceIdGetsTheDefaultLevel) {
  json j = probe("0x1061D2F");
  EXPECT_EQ(j.value("count", -1), 1);
  EXPECT_EQ(j.value("sl", -1), 0);
}

// RDMA_QOS_MPR=1: OpenSM advertises MultiPathRecord (CapabilityMask bit 10), so the query is a
// MultiPathRecord; its answer selects the same levels as the PathRecord's.
TEST_F(IbRouteOpenSm, MultiPathRecordSelectsTheSameLevels) {
  json iser = probe("0x1060CBC", "", true);
  EXPECT_EQ(iser.value("multipath", false), true) << iser.dump();
  EXPECT_EQ(iser.value("count", -1), 1);
  EXPECT_EQ(iser.value("sl", -1), 3);
  EXPECT_EQ(iser.value("flags", 0u), 0x2Bu);
  json gold = probe("0x1060CBC", "7", true);
  EXPECT_EQ(gold.value("multipath", false), true) << gold.dump();
  EXPECT_EQ(gold.value("comp_mask", 0ULL) & 0x4000ULL, 0x4000ULL);
  EXPECT_EQ(gold.value("sl", -1), 5);
  EXPECT_EQ(gold.value("mtu", -1), 3);
}

}  // namespace
