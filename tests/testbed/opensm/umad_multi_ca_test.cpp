// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The umad_multi_ca stand-in against ibsim and OpenSM: one process plays a host with two
// devices, or with one two-port device, each port at its own ibsim node. saquery through a port
// is answered only if its query left by that port: OpenSM answers to the LID the request came
// from, and ibsim hands an answer only to a client attached at the port of that LID.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::testbed {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// saquery's PathRecord from `device` port `port` of the host, from `source`'s LID to node005.
RunResult path_query(const IbFabric& fabric, const std::map<std::string, std::string>& env,
                     const std::string& device, int port, const std::string& source) {
  ProcessOptions p;
  p.argv = {"saquery",
            "-C",
            device,
            "-P",
            std::to_string(port),
            "-p",
            "--slid",
            fabric.lid_arg(source),
            "--dlid",
            fabric.lid_arg("node005")};
  p.env = env;
  p.cwd = fabric.dir();
  return run(p, 20s);
}

void expect_answer_from(const IbFabric& fabric, const RunResult& r, const std::string& source) {
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto records = parse_saquery_output(r.output);
  ASSERT_EQ(records.size(), 1u) << r.output;
  auto answer = path_answer(records[0]);
  ASSERT_TRUE(answer) << r.output;
  EXPECT_EQ(answer->slid, fabric.lid(source));
  EXPECT_EQ(answer->dlid, fabric.lid("node005"));
}

TEST(UmadMultiCa, EachDeviceAsksTheSaFromItsOwnPort) {
  IbFabric fabric(fabric_options(make_fat_tree({})));
  const std::string trace = fabric.dir() + "/umad.trace";
  auto env = fabric.host_env({{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}}, trace);
  expect_answer_from(fabric, path_query(fabric, env, "mlx5_1", 1, "node002"), "node002");
  expect_answer_from(fabric, path_query(fabric, env, "mlx5_0", 1, "node001"), "node001");
  const std::string text = read_file(trace);
  EXPECT_NE(text.find("send mlx5_1/1 node node002 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("send mlx5_0/1 node node001 dlid 1 class 0x03 attr 0x0035"),
            std::string::npos)
      << text;
}

TEST(UmadMultiCa, PortTwoOfADeviceAsksFromItsOwnNode) {
  IbFabric fabric(fabric_options(make_fat_tree({})));
  const std::string trace = fabric.dir() + "/umad.trace";
  auto env = fabric.host_env({{"mlx5_0", 1, "node001"}, {"mlx5_0", 2, "node002"}}, trace);
  expect_answer_from(fabric, path_query(fabric, env, "mlx5_0", 2, "node002"), "node002");
  const std::string text = read_file(trace);
  EXPECT_NE(text.find("send mlx5_0/2 node node002"), std::string::npos) << text;
  EXPECT_EQ(text.find("send mlx5_0/1"), std::string::npos) << text;
}

// A directed-route SMP with an empty path is answered by the node behind the device's port.
TEST(UmadMultiCa, ADirectedRouteSmpReachesTheNodeBehindItsDevice) {
  IbFabric fabric(fabric_options(make_fat_tree({})));
  auto env = fabric.host_env({{"mlx5_0", 1, "node001"}, {"mlx5_1", 1, "node002"}});
  for (const auto& [device, description] :
       {std::pair{"mlx5_0", "node001 HCA-1"}, std::pair{"mlx5_1", "node002 HCA-1"}}) {
    ProcessOptions p;
    p.argv = {"smpquery", "-C", device, "-D", "nodedesc", "0"};
    p.env = env;
    p.cwd = fabric.dir();
    RunResult r = run(p, 20s);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(description), std::string::npos) << device << ": " << r.output;
  }
}

// With port 2's cable pulled (ibsim's Unlink), a query from port 2 is not answered, and one
// from port 1 still is: the ports' MADs do not share a link.
TEST(UmadMultiCa, APortWhoseLinkIsDownDoesNotTakeTheOtherDown) {
  IbFabricOptions o = fabric_options(make_fat_tree({}));
  o.ibsim_console = true;
  IbFabric fabric(o);
  auto env = fabric.host_env({{"mlx5_0", 1, "node001"}, {"mlx5_0", 2, "node002"}});
  fabric.ibsim_command("Unlink \"node002\"");
  RunResult down = path_query(fabric, env, "mlx5_0", 2, "node002");
  EXPECT_NE(down.exit_code, 0) << down.output;
  // ibsim returns a MAD it cannot route to its sender at once, with status ETIMEDOUT.
  EXPECT_NE(down.output.find("timed out"), std::string::npos) << down.output;
  expect_answer_from(fabric, path_query(fabric, env, "mlx5_0", 1, "node001"), "node001");
}

}  // namespace
}  // namespace rdmaqos::testbed
