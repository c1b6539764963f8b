// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's model follows the live fabric: a CA unlinked through ibsim's console disappears
// from the answers after OpenSM's next sweep, and answers again once relinked and swept.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;

// Records of saquery -p from node001 to `lid`.
size_t path_records(const IbFabric& f, uint16_t lid) {
  auto r = f.run_at(
      "node001", {"saquery", "-p", "--slid", f.lid_arg("node001"), "--dlid", std::to_string(lid)});
  return testbed::parse_saquery_output(r.output).size();
}

// Polls until `want` holds (every 200 ms, at most 30 s).
template <typename F>
bool eventually(F want) {
  for (int i = 0; i < 150; ++i) {
    if (want()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
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

}  // namespace
}  // namespace rdmaqos::osmp
