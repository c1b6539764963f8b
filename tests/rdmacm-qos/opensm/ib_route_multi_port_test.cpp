// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The preload module on a multi-rail host: the client runs as a host with two CAs, or a
// two-port CA, each port at its own ibsim node (the test bed's umad_multi_ca), and the stand-in
// librdmacm puts its id on a chosen device and port. The module's PathRecord query leaves by
// the port of the id's device, and OpenSM's answer (iSER's SL 3) comes back through it: ibsim
// hands an answer only to a client at the port whose LID asked.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using rdmaqos::testbed::HostPort;
using rdmaqos::testbed::IbFabric;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class IbRouteMultiPort : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = rdmaqos::testbed::start_fat_tree(
        rdmaqos::testbed::sample_policy({.sdp_ulp = false, .gold_first = true}));
  }
  static void TearDownTestSuite() { fabric_.reset(); }

  struct Connection {
    int exit_code = -1;
    std::string output;
    int sl = -1;  // the SL of the path rdma_set_option installed; -1: none installed
    std::string trace;
  };

  // One asynchronous iSER connection from `device` port `port` (whose port is `source`'s) to
  // node005, by the unmodified-style client over the stand-in librdmacm with the module.
  static Connection connect(const std::vector<HostPort>& host, const std::string& device, int port,
                            const std::string& source, const std::string& sa_lid = "") {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const std::string dir = fabric_->dir();
    const std::string log = dir + "/fake-rdmacm-" + test + ".log";
    const std::string trace = dir + "/umad-" + test + ".trace";
    const std::string config = dir + "/rdma-qos-empty.conf";
    std::ofstream(config).flush();
    rdmaqos::testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_IB_ROUTE_CLIENT, "async", "3260"};
    p.env = fabric_->host_env(host, trace);
    p.env["LD_PRELOAD"] += ":" RDMA_QOS_PRELOAD_MODULE;
    p.env["FAKE_RDMACM_DEVICE"] = device;
    p.env["FAKE_RDMACM_PORT"] = std::to_string(port);
    p.env["FAKE_RDMACM_SGUID"] = std::to_string(fabric_->port_guid(source));
    p.env["FAKE_RDMACM_DGUID"] = std::to_string(fabric_->port_guid("node005"));
    p.env["FAKE_RDMACM_LOG"] = log;
    p.env["RDMA_QOS_CONFIG"] = config;
    p.env["RDMA_QOS_SA"] = "on";
    if (!sa_lid.empty()) p.env["RDMA_QOS_SA_LID"] = sa_lid;
    p.cwd = dir;
    auto r = rdmaqos::testbed::run(p, 20s);
    Connection c{r.exit_code, r.output, -1, read_file(trace)};
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      auto j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("option", "") == "ib_path") c.sl = j.value("sl", -1);
    }
    return c;
  }

  static inline std::unique_ptr<IbFabric> fabric_;
};

const std::vector<HostPort> kTwoCas = {{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}};

TEST_F(IbRouteMultiPort, AnIdOnTheSecondCaAsksThroughIt) {
  Connection c = connect(kTwoCas, "mlx5_1", 1, "node002");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.sl, 3) << c.output;  // iSER's level: OpenSM's answer was installed
  EXPECT_NE(c.trace.find("send mlx5_1/1 node node002 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << c.trace;
  EXPECT_EQ(c.trace.find("send mlx5_0/"), std::string::npos) << c.trace;
}

TEST_F(IbRouteMultiPort, AnIdOnTheFirstCaStillAsksThroughIt) {
  Connection c = connect(kTwoCas, "mlx5_0", 1, "node001");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.sl, 3) << c.output;
  EXPECT_NE(c.trace.find("send mlx5_0/1 node node001 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << c.trace;
  EXPECT_EQ(c.trace.find("send mlx5_1/"), std::string::npos) << c.trace;
}

// Port 2 of a two-port CA is another ibsim node's port (ibsim carries a CA's GMPs on its first
// port only; testing.md).
TEST_F(IbRouteMultiPort, AnIdOnPortTwoAsksThroughPortTwo) {
  Connection c =
      connect({{"mlx5_0", 1, "node001"}, {"mlx5_0", 2, "node002"}}, "mlx5_0", 2, "node002");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.sl, 3) << c.output;
  EXPECT_NE(c.trace.find("send mlx5_0/2 node node002 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << c.trace;
  EXPECT_EQ(c.trace.find("send mlx5_0/1"), std::string::npos) << c.trace;
}

// sa_lid per port: each port asks the SA its entry names, the others their SM. The LID named for
// the second CA is a CA's (node003: no SA there, so its query fails and the module falls back to
// the kernel's route, no SL installed), which shows in the trace as the destination LID.
TEST_F(IbRouteMultiPort, SaLidPerPortAppliesToItsPortOnly) {
  const std::string elsewhere = fabric_->lid_arg("node003");
  const std::string lids = "mlx5_1:1=" + elsewhere;
  Connection second = connect(kTwoCas, "mlx5_1", 1, "node002", lids);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.trace.find("send mlx5_1/1 node node002 dlid " +
                              std::to_string(std::stoul(elsewhere, nullptr, 0)) + " class 0x03"),
            std::string::npos)
      << second.trace;
  EXPECT_EQ(second.trace.find("dlid 1 class 0x03"), std::string::npos) << second.trace;
  EXPECT_EQ(second.sl, -1) << second.output;
  Connection first = connect(kTwoCas, "mlx5_0", 1, "node001", lids);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.sl, 3) << first.output;  // its SM answered
  EXPECT_NE(first.trace.find("send mlx5_0/1 node node001 dlid 1 class 0x03"), std::string::npos)
      << first.trace;
}

}  // namespace
