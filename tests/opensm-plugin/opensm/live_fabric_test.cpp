// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's model follows the live fabric through ibsim's console: a CA unlinked disappears
// from the answers after OpenSM's next sweep and answers again once relinked; a CA that was never
// linked is plugged in and answered; a CA whose LID changes is answered at its new LID only.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::osmp {
namespace {

using testing::eventually;

using testbed::IbFabric;

// Records of saquery -p from node001 to `lid`.
size_t path_records(const IbFabric& f, uint16_t lid) {
  auto r = f.run_at(
      "node001", {"saquery", "-p", "--slid", f.lid_arg("node001"), "--dlid", std::to_string(lid)});
  return testbed::parse_saquery_output(r.output).size();
}

// The LID OpenSM gave the port `port_guid`, from the guid2lid file OpenSM writes in the fabric's
// directory (OSM_CACHE_DIR) once it has assigned LIDs; nullopt while it has none. (saquery -l
// cannot tell: without RMPP on ibsim its NodeRecord table holds one record.)
std::optional<uint16_t> lid_of(const IbFabric& f, uint64_t port_guid) {
  std::ifstream in(f.dir() + "/guid2lid");
  std::string guid, min_lid, max_lid;
  while (in >> guid >> min_lid >> max_lid) {
    if (std::stoull(guid, nullptr, 16) == port_guid)
      return static_cast<uint16_t>(std::stoul(min_lid, nullptr, 16));
  }
  return std::nullopt;
}

TEST(PluginOnALiveFabric, ACaUnlinkedAndRelinkedIsFollowedWithinASweep) {
  auto o = testing::plugin_fabric_options();
  o.ibsim_console = true;
  IbFabric f(o);
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering)) << f.opensm_log();
  const uint16_t lid = f.lid("node002");
  ASSERT_EQ(path_records(f, lid), 1u);

  // ibsim sends trap 128 for the switch port that went down; OpenSM sweeps, drops node002, and
  // the plugin's next model no longer has it.
  f.ibsim_command("Unlink \"node002\"");
  EXPECT_TRUE(eventually([&] { return path_records(f, lid) == 0; })) << f.opensm_log();

  f.ibsim_command("ReLink \"node002\"");
  // A sweep brings it back (SIGHUP: OpenSM re-reads its configuration and sweeps).
  ::kill(f.pids()[1], SIGHUP);
  EXPECT_TRUE(eventually([&] { return path_records(f, lid) == 1; })) << f.opensm_log();
}

// A CA in ibsim's topology with no link is a node OpenSM has never seen; `Link` plugs it into a
// free leaf port, as a new host cabled into a running fabric. OpenSM gives it a LID in the
// sweep that follows, and the plugin answers for it from the model built when that sweep ends.
TEST(PluginOnALiveFabric, ANodeAddedThroughIbsimsConsoleIsAnsweredWithinASweep) {
  auto o = testing::plugin_fabric_options();
  o.ibsim_console = true;
  o.topology.netfile += "caguid=0x0002c90300ee0000\nCa 1 \"node099\" # \"node099 HCA-1\"\n\n";
  IbFabric f(o);
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering)) << f.opensm_log();
  constexpr uint64_t kNewPort = 0x0002c90300ee0001;  // ibsim: the CA's GUID + the port number
  ASSERT_FALSE(lid_of(f, kNewPort).has_value());

  // leaf02's port 8 is free (ports 2..5 CAs, 6..7 spines). ibsim's trap 128 for it makes
  // OpenSM sweep; SIGHUP makes sure a sweep runs even where the trap is lost.
  f.ibsim_command("Link \"leaf02\"[8] \"node099\"[1]");
  ::kill(f.pids()[1], SIGHUP);
  std::optional<uint16_t> lid;
  ASSERT_TRUE(eventually([&] { return (lid = lid_of(f, kNewPort)).has_value(); }))
      << f.opensm_log();
  EXPECT_TRUE(eventually([&] { return path_records(f, *lid) == 1; })) << f.opensm_log();
}

// A LID change: node002's CA is unplugged and, while out, given new node and port GUIDs with
// ibsim's `Guid` command (a host whose HCA was replaced), then plugged back in. OpenSM keeps
// the old port GUID's LID reserved in its guid2lid table, so the port that comes back gets a
// new LID; the plugin answers at the new LID and no longer at the old one. (OpenSM never moves
// the LID of a port it keeps seeing: it sets any LID it finds changed back to its own at the
// next heavy sweep, so a new port GUID, or a new OpenSM run with an edited guid2lid file or
// another --lmc, is how a LID changes under OpenSM.)
TEST(PluginOnALiveFabric, ALidChangeIsFollowedWithinASweep) {
  auto o = testing::plugin_fabric_options();
  o.ibsim_console = true;
  IbFabric f(o);
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering)) << f.opensm_log();
  const uint16_t old_lid = f.lid("node002");
  ASSERT_EQ(path_records(f, old_lid), 1u);

  f.ibsim_command("Unlink \"node002\"");
  ASSERT_TRUE(eventually([&] { return path_records(f, old_lid) == 0; })) << f.opensm_log();
  f.ibsim_command("Guid \"node002\" 0x0002c90300ee1000");
  f.ibsim_command("Guid \"node002\"[1] 0x0002c90300ee1001");
  f.ibsim_command("ReLink \"node002\"");
  ::kill(f.pids()[1], SIGHUP);

  std::optional<uint16_t> lid;
  ASSERT_TRUE(eventually([&] { return (lid = lid_of(f, 0x0002c90300ee1001)).has_value(); }))
      << f.opensm_log();
  EXPECT_NE(*lid, old_lid);
  EXPECT_TRUE(eventually([&] { return path_records(f, *lid) == 1; })) << f.opensm_log();
  EXPECT_EQ(path_records(f, old_lid), 0u);
}

}  // namespace
}  // namespace rdmaqos::osmp
