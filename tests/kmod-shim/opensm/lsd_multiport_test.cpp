// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd on a multi-rail host: the daemon runs as a host with two CAs, or with one
// two-port CA, each port at its own node of an ibsim fabric (the test bed's umad_multi_ca; see
// testing.md), OpenSM its SM and SA. The simulated kernel sends RESOLVE requests naming a device
// and port as sa_query.c does, and each is answered through the port it names: OpenSM answers
// to the LID a query came from and ibsim hands an answer only to a client at that LID's port, so
// an answer at all says the query left by that port; the stand-in's trace says it as well.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "../sim_kernel.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testbed::HostPort;
using testbed::IbFabric;
using testing::SimulatedKernel;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

sa::Gid gid_of(uint64_t port_guid) {
  return sa::make_gid(0xfe80000000000000ULL, port_guid);
}

// rdma-qos-lsd as the host `ports` describe, talking to a simulated kernel.
class MultiRailHost {
 public:
  // `config`: more lines for rdma-qos.conf.
  MultiRailHost(const IbFabric& fabric, const std::vector<HostPort>& ports,
                const std::string& config_lines = "")
      : fabric_(fabric),
        log_path_(fabric.dir() + "/lsd.log"),
        trace_path_(fabric.dir() + "/umad.trace") {
    const std::string config = fabric.dir() + "/lsd.conf";
    std::ofstream(config) << "log_level debug\n" << config_lines;
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_LSD,       "--foreground",           "--no-control-socket",
              "--no-path-socket", "--test-usersock-kernel", std::to_string(kernel_.port())};
    p.env = fabric.host_env(ports, trace_path_);
    p.env["RDMA_QOS_CONFIG"] = config;
    p.cwd = fabric.dir();
    p.output_path = log_path_;
    daemon_ = std::make_unique<testbed::Process>(testbed::Process::spawn(p));
    auto first = kernel_.receive(10s);
    if (!first) throw std::runtime_error("no SET_TIMEOUT from rdma-qos-lsd:\n" + log());
    timeout_ = std::chrono::milliseconds(decode_set_timeout(*first).value());
    daemon_port_ = kernel_.last_sender();
  }
  ~MultiRailHost() { daemon_->stop(); }

  std::string log() const { return read_file(log_path_); }
  std::string trace() const { return read_file(trace_path_); }

  // A GMP path request from `device` port `port`, whose port GUID is `sguid`, to node005.
  void ask(uint32_t seq, const std::string& device, uint8_t port, uint64_t sguid) {
    ResolveRequest r;
    r.seq = seq;
    r.device = device;
    r.port_num = port;
    r.path_use = PathUse::kGmp;
    r.sgid = gid_of(sguid);
    r.dgid = gid_of(fabric_.port_guid("node005"));
    r.pkey = 0xffff;
    kernel_.send_to(daemon_port_, encode_resolve_request(r));
  }

  // The next `count` replies, by sequence number, each within the kernel's timeout.
  std::map<uint32_t, DecodedReply> replies(int count) {
    std::map<uint32_t, DecodedReply> got;
    for (int i = 0; i < count; ++i) {
      auto bytes = kernel_.receive(timeout_);
      if (!bytes) throw std::runtime_error("no reply within the kernel's timeout:\n" + log());
      auto reply = decode_resolve_reply(*bytes);
      if (!reply) throw std::runtime_error(reply.error().message);
      got[reply->header.seq] = *reply;
    }
    return got;
  }

 private:
  const IbFabric& fabric_;
  const std::string log_path_;
  const std::string trace_path_;
  SimulatedKernel kernel_;
  std::unique_ptr<testbed::Process> daemon_;
  std::chrono::milliseconds timeout_{};
  uint32_t daemon_port_ = 0;
};

// OpenSM's path from `node`'s port to node005, as the reply carries it.
void expect_path_from(const IbFabric& fabric, const DecodedReply& reply, const std::string& node,
                      const std::string& log) {
  ASSERT_FALSE(reply.error) << log;
  ASSERT_EQ(reply.paths.size(), 1u) << log;
  EXPECT_EQ(reply.paths[0].record.sgid, gid_of(fabric.port_guid(node)));
  EXPECT_EQ(reply.paths[0].record.slid, fabric.lid(node));
  EXPECT_EQ(reply.paths[0].record.dlid, fabric.lid("node005"));
}

// sa_lid per port: the port it names asks that LID (a CA's, node003: no SA there, so the request
// gets F_ERR), the other port still asks its SM and is answered.
TEST(LsdMultiPort, SaLidPerPortAppliesToItsPortOnly) {
  IbFabric fabric(testbed::fabric_options(testbed::make_fat_tree({})));
  const uint16_t elsewhere = fabric.lid("node003");
  MultiRailHost host(
      fabric, {{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}},
      fmt::format("sa_lid mlx5_1:1={}\nsa_timeout_ms 200\nsa_retries 0\n", elsewhere));
  host.ask(1, "mlx5_1", 1, fabric.port_guid("node002"));
  host.ask(2, "mlx5_0", 1, fabric.port_guid("node001"));
  auto got = host.replies(2);
  const std::string log = host.log();
  EXPECT_TRUE(got[1].error) << log;
  expect_path_from(fabric, got[2], "node001", log);
  EXPECT_NE(log.find(fmt::format("SA client on mlx5_1 port 1 (LID {}), SA LID {}",
                                 fabric.lid("node002"), elsewhere)),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find(fmt::format("SA client on mlx5_0 port 1 (LID {}), SA LID 1", fabric.lid("node001"))),
      std::string::npos)
      << log;
  const std::string trace = host.trace();
  EXPECT_NE(trace.find(fmt::format("send mlx5_1/1 node node002 dlid {} class 0x03", elsewhere)),
            std::string::npos)
      << trace;
  EXPECT_EQ(trace.find("send mlx5_1/1 node node002 dlid 1 "), std::string::npos) << trace;
}

TEST(LsdMultiPort, EachRequestIsAnsweredThroughTheCaItNames) {
  IbFabric fabric(testbed::fabric_options(testbed::make_fat_tree({})));
  MultiRailHost host(fabric, {{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}});
  host.ask(1, "mlx5_1", 1, fabric.port_guid("node002"));
  host.ask(2, "mlx5_0", 1, fabric.port_guid("node001"));
  auto got = host.replies(2);
  const std::string log = host.log();
  expect_path_from(fabric, got[1], "node002", log);
  expect_path_from(fabric, got[2], "node001", log);
  EXPECT_NE(log.find(fmt::format("SA client on mlx5_1 port 1 (LID {})", fabric.lid("node002"))),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(fmt::format("SA client on mlx5_0 port 1 (LID {})", fabric.lid("node001"))),
            std::string::npos)
      << log;
  const std::string trace = host.trace();
  EXPECT_NE(trace.find("send mlx5_1/1 node node002 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("send mlx5_0/1 node node001 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << trace;
}

// ibsim attaches every client at a CA's first port and has no way to send or receive a GMP at
// another (testing.md), so the second port of this CA is another node's port. To the daemon it
// is port 2 of mlx5_0 with its own LID, GID and umad port, as on a real two-port CA.
TEST(LsdMultiPort, PortTwoOfATwoPortCaIsAnsweredThroughPortTwo) {
  IbFabric fabric(testbed::fabric_options(testbed::make_fat_tree({})));
  MultiRailHost host(fabric, {{"mlx5_0", 1, "node001"}, {"mlx5_0", 2, "node002"}});
  host.ask(1, "mlx5_0", 1, fabric.port_guid("node001"));
  host.ask(2, "mlx5_0", 2, fabric.port_guid("node002"));
  auto got = host.replies(2);
  const std::string log = host.log();
  expect_path_from(fabric, got[1], "node001", log);
  expect_path_from(fabric, got[2], "node002", log);
  EXPECT_NE(log.find(fmt::format("SA client on mlx5_0 port 2 (LID {})", fabric.lid("node002"))),
            std::string::npos)
      << log;
  const std::string trace = host.trace();
  EXPECT_NE(trace.find("send mlx5_0/2 node node002"), std::string::npos) << trace;
  EXPECT_NE(trace.find("send mlx5_0/1 node node001"), std::string::npos) << trace;
}

// mlx5_1's cable is pulled (ibsim's Unlink) after both CAs have answered once: its next request
// gets F_ERR (the kernel then asks the SA itself) within the kernel's timeout, and mlx5_0's is
// still answered.
TEST(LsdMultiPort, ACaWhoseLinkWentDownFailsAloneAndTheOtherIsStillAnswered) {
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.ibsim_console = true;
  IbFabric fabric(o);
  MultiRailHost host(fabric, {{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}});
  host.ask(1, "mlx5_0", 1, fabric.port_guid("node001"));
  host.ask(2, "mlx5_1", 1, fabric.port_guid("node002"));
  auto before = host.replies(2);
  expect_path_from(fabric, before[1], "node001", host.log());
  expect_path_from(fabric, before[2], "node002", host.log());

  fabric.ibsim_command("Unlink \"node002\"");
  host.ask(3, "mlx5_1", 1, fabric.port_guid("node002"));
  host.ask(4, "mlx5_0", 1, fabric.port_guid("node001"));
  auto after = host.replies(2);
  const std::string log = host.log();
  EXPECT_TRUE(after[3].error) << "a request through the unlinked CA was answered:\n" << log;
  EXPECT_NE(log.find("seq 3: F_ERR"), std::string::npos) << log;
  expect_path_from(fabric, after[4], "node001", log);
}

// Port 2's link is down before the daemon starts: its SA client cannot open (the port is not
// active), so its request gets F_ERR at once, while port 1 of the same CA is answered.
TEST(LsdMultiPort, APortThatIsDownGetsFErrAndTheCasOtherPortIsAnswered) {
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.ibsim_console = true;
  IbFabric fabric(o);
  fabric.ibsim_command("Unlink \"node002\"");
  MultiRailHost host(fabric, {{"mlx5_0", 1, "node001"}, {"mlx5_0", 2, "node002"}});
  host.ask(1, "mlx5_0", 2, fabric.port_guid("node002"));
  host.ask(2, "mlx5_0", 1, fabric.port_guid("node001"));
  auto got = host.replies(2);
  const std::string log = host.log();
  EXPECT_TRUE(got[1].error) << "a request through the down port was answered:\n" << log;
  expect_path_from(fabric, got[2], "node001", log);
  EXPECT_NE(log.find("mlx5_0 port 2 is not an active InfiniBand port"), std::string::npos) << log;
}

}  // namespace
}  // namespace rdmaqos::kmod
