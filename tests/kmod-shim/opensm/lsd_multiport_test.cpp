// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd on a multi-rail host: node001 of an ibsim fabric has a two-port CA, each port
// cabled to the leaf switch with its own LID. The simulated kernel sends one RESOLVE request per
// port, naming that port as sa_query.c does, and the daemon sends each through the port it
// names. umad2sim gives a process port 1 of its node only (ibsim0 shows one port), so the port-1
// request gets OpenSM's path and the port-2 request an F_ERR after the daemon tried to open
// ibsim0 port 2, not an answer sent out of port 1. The answers of several ports are tested with
// a fake SA per port (kmod-shim.DaemonWithFakeSa.EachRequestIsAnsweredThroughThePortItNames).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../sim_kernel.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::kmod {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;
using testing::SimulatedKernel;

constexpr uint64_t kNode001Guid = 0x0002c90300a00010ULL;  // its ports: +1 and +2
constexpr uint64_t kNode002Port = 0x0002c90300a00021ULL;

sa::Gid gid_of(uint64_t port_guid) {
  return sa::make_gid(0xfe80000000000000ULL, port_guid);
}

// sm01 (LID 1), node001 with ports 1 (LID 2) and 2 (LID 3), node002 (LID 4), one switch.
testbed::Topology two_port_host() {
  testbed::Topology t;
  t.netfile = R"(caguid=0x0002c90300a00000
Ca 1 "sm01" # "sm01 HCA-1"
[1] "leaf01"[1] w=2 s=4 lid 1

caguid=0x0002c90300a00010
Ca 2 "node001" # "node001 HCA-1"
[1] "leaf01"[2] w=2 s=4 lid 2
[2] "leaf01"[3] w=2 s=2 lid 3

caguid=0x0002c90300a00020
Ca 1 "node002" # "node002 HCA-1"
[1] "leaf01"[4] w=2 s=4 lid 4

switchguid=0x0002c90300f00000
Switch 8 "leaf01" # "leaf01 switch" lid 5
[1] "sm01"[1] w=2 s=4
[2] "node001"[1] w=2 s=4
[3] "node001"[2] w=2 s=2
[4] "node002"[1] w=2 s=4
)";
  using testbed::NodeKind;
  t.nodes = {
      {"sm01",
       "sm01 HCA-1",
       NodeKind::kCa,
       1,
       0x0002c90300a00000ULL,
       0x0002c90300a00001ULL,
       {},
       "leaf01"},
      {"node001", "node001 HCA-1", NodeKind::kCa, 2, kNode001Guid, kNode001Guid + 1, {}, "leaf01"},
      {"node002",
       "node002 HCA-1",
       NodeKind::kCa,
       4,
       0x0002c90300a00020ULL,
       kNode002Port,
       {},
       "leaf01"},
      {"leaf01",
       "leaf01 switch",
       NodeKind::kSwitch,
       5,
       0x0002c90300f00000ULL,
       0x0002c90300f00000ULL,
       {},
       {}},
  };
  return t;
}

TEST(LsdMultiPort, EachRequestGoesOutOfThePortItNames) {
  IbFabric fabric(testbed::fabric_options(two_port_host()));
  SimulatedKernel kernel;
  const std::string config = fabric.dir() + "/lsd.conf";
  std::ofstream(config) << "log_level debug\n";
  const std::string log_path = fabric.dir() + "/lsd.log";
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_LSD, "--foreground", "--no-control-socket", "--test-usersock-kernel",
            std::to_string(kernel.port())};
  p.env = fabric.client_env("node001");
  p.env["RDMA_QOS_CONFIG"] = config;
  p.cwd = fabric.dir();
  p.output_path = log_path;
  auto daemon = testbed::Process::spawn(p);
  auto log = [&] {
    std::ifstream in(log_path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto first = kernel.receive(10s);
  ASSERT_TRUE(first) << "no SET_TIMEOUT from rdma-qos-lsd:\n" << log();
  const auto kernel_timeout = std::chrono::milliseconds(decode_set_timeout(*first).value());
  const uint32_t daemon_port = kernel.last_sender();

  for (uint8_t port : {1, 2}) {
    ResolveRequest r;
    r.seq = port;
    r.device = "ibsim0";
    r.port_num = port;
    r.path_use = PathUse::kGmp;
    r.sgid = gid_of(kNode001Guid + port);
    r.dgid = gid_of(kNode002Port);
    r.pkey = 0xffff;
    kernel.send_to(daemon_port, encode_resolve_request(r));
  }
  std::map<uint32_t, DecodedReply> got;
  for (int i = 0; i < 2; ++i) {
    auto bytes = kernel.receive(kernel_timeout);
    ASSERT_TRUE(bytes) << "no reply within the kernel's timeout:\n" << log();
    auto reply = decode_resolve_reply(*bytes);
    ASSERT_TRUE(reply) << reply.error().message;
    got[reply->header.seq] = *reply;
  }
  const DecodedReply& first_port = got[1];
  ASSERT_FALSE(first_port.error) << log();
  ASSERT_EQ(first_port.paths.size(), 1u);
  EXPECT_EQ(first_port.paths[0].record.sgid, gid_of(kNode001Guid + 1));
  EXPECT_EQ(first_port.paths[0].record.slid, 2);
  EXPECT_EQ(first_port.paths[0].record.dlid, 4);
  EXPECT_TRUE(got[2].error) << "port 2's request was answered through another port:\n" << log();
  const std::string text = log();
  EXPECT_NE(text.find("SA client on ibsim0 port 1"), std::string::npos) << text;
  EXPECT_NE(text.find("umad_get_port(ibsim0, 2)"), std::string::npos) << text;
  EXPECT_EQ(text.find("SA client on ibsim0 port 2"), std::string::npos) << text;
  daemon.stop();
}

}  // namespace
}  // namespace rdmaqos::kmod
