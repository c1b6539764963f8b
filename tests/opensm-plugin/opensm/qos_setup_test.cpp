// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's policy file inside OpenSM: read and parsed once for both of its users (the
// PathRecord answers and the qos-setup tables OpenSM's heavy sweeps program), nothing read
// again or compiled again at a heavy sweep that changes nothing, and every qos-setup diagnostic
// in OpenSM's log once per version of the policy, not at every sweep.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;
using testing::kAnswering;
using testing::plugin_fabric_options;
using testing::wait_for_log;

// A qos-setup scope for the ports of group Tenant, which names the partition `partition`, and
// a DEFAULT level of SL `sl`.
std::string setup_policy(const std::string& partition, int sl) {
  return "port-groups\n  port-group\n    name: Tenant\n    partition: " + partition +
         "\n  end-port-group\nend-port-groups\n"
         "qos-setup\n  sl2vl-tables\n    sl2vl-scope\n      group: Tenant\n"
         "      sl2vl-table: 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3\n    end-sl2vl-scope\n"
         "  end-sl2vl-tables\nend-qos-setup\n"
         "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: " +
         std::to_string(sl) + "\n  end-qos-level\nend-qos-levels\n";
}

nlohmann::json stats(const IbFabric& f) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin", "stats", "--json", "--socket", f.dir() + "/plugin.sock"};
  auto r = testbed::run(p, std::chrono::seconds(20));
  size_t start = r.output.find('{');
  if (start == std::string::npos) return nlohmann::json::object();
  auto j = nlohmann::json::parse(r.output.substr(start), nullptr, false);
  if (!j.is_object()) return nlohmann::json::object();
  return j.contains("stats") ? j["stats"] : j;
}

uint64_t number(const nlohmann::json& s, const char* block, const char* key) {
  if (!s.contains(block) || !s[block].contains(key)) return 0;
  return s[block][key].get<uint64_t>();
}

// Polls the stats until `done` holds for them (every 200 ms, at most 60 s); the last ones.
nlohmann::json stats_when(const IbFabric& f,
                          const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json s;
  for (int i = 0; i < 300; ++i) {
    s = stats(f);
    if (done(s)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return s;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A heavy sweep (OpenSM re-reads its configuration and sweeps on SIGHUP), waited for until the
// qos-setup hook saw it start and the engine built the model it ends with. A SIGHUP that
// arrives while OpenSM is still finishing the previous sweep can be folded into it, so it is
// sent again every 5 s of waiting (on a loaded machine one wait used to run out its 60 s).
nlohmann::json heavy_sweep(const IbFabric& f, const nlohmann::json& before) {
  int polls = 0;
  ::kill(f.pids()[1], SIGHUP);
  return stats_when(f, [&](const nlohmann::json& s) {
    if (number(s, "qos_setup", "heavy_sweeps") > number(before, "qos_setup", "heavy_sweeps") &&
        number(s, "fabric", "models") > number(before, "fabric", "models"))
      return true;
    if (++polls % 25 == 0) ::kill(f.pids()[1], SIGHUP);
    return false;
  });
}

TEST(PluginPolicyFile, AHeavySweepWithNothingChangedReadsParsesAndBuildsNothing) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = setup_policy("Default", 4);
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  ASSERT_TRUE(wait_for_log(f, "qos-setup: 1 sl2vl and 0 vlarb scope(s)")) << f.opensm_log();
  // Past the first heavy sweep and its model, and past the time within which a file just
  // written is read once more to compare its text (PolicySource).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  nlohmann::json before = stats_when(f, [](const nlohmann::json& s) {
    return number(s, "qos_setup", "heavy_sweeps") >= 1 && number(s, "fabric", "models") >= 1;
  });
  ASSERT_GE(number(before, "qos_setup", "heavy_sweeps"), 1u) << before.dump();
  // One parse served both: the answers' compiled policy and the qos-setup scopes.
  EXPECT_EQ(number(before, "policy", "parses"), 1u) << before.dump();
  EXPECT_EQ(number(before, "policy", "compiles"), 1u) << before.dump();

  // Two heavy sweeps with nothing changed (the racy window may cost one more read, never a
  // parse): no read at the second, no parse, compilation or scope built at either.
  nlohmann::json after = heavy_sweep(f, before);
  ASSERT_GT(number(after, "qos_setup", "heavy_sweeps"), number(before, "qos_setup", "heavy_sweeps"))
      << after.dump() << f.opensm_log();
  nlohmann::json again = heavy_sweep(f, after);
  for (const nlohmann::json* s : {&after, &again}) {
    EXPECT_EQ(number(*s, "policy", "parses"), number(before, "policy", "parses")) << s->dump();
    EXPECT_EQ(number(*s, "policy", "compiles"), number(before, "policy", "compiles")) << s->dump();
    EXPECT_EQ(number(*s, "qos_setup", "builds"), number(before, "qos_setup", "builds"))
        << s->dump();
  }
  EXPECT_EQ(number(again, "policy", "reads"), number(after, "policy", "reads")) << again.dump();

  // A changed policy: read and parsed once for both, compiled once, the scopes built once (the
  // partitions are OpenSM's, unchanged).
  // Replaced whole (written beside it, then renamed over it), as an editor saves: a file
  // truncated and then written could be read empty by a sweep in between, one more parse.
  const std::string policy = f.dir() + "/plugin-policy.conf";
  std::ofstream(policy + ".new") << setup_policy("Default", 5);
  std::filesystem::rename(policy + ".new", policy);
  nlohmann::json changed = heavy_sweep(f, again);
  changed = stats_when(f, [&](const nlohmann::json& s) {
    // The scopes are built after the compile, possibly a sweep later under load: wait for both.
    return number(s, "policy", "compiles") > number(again, "policy", "compiles") &&
           number(s, "qos_setup", "builds") > number(again, "qos_setup", "builds");
  });
  EXPECT_EQ(number(changed, "policy", "parses"), number(again, "policy", "parses") + 1)
      << changed.dump();
  EXPECT_EQ(number(changed, "policy", "compiles"), number(again, "policy", "compiles") + 1)
      << changed.dump();
  EXPECT_EQ(number(changed, "qos_setup", "builds"), number(again, "qos_setup", "builds") + 1)
      << changed.dump();
  for (const auto& [name, j] : {std::pair<const char*, const nlohmann::json*>{"start", &before},
                                {"unchanged", &after},
                                {"unchanged", &again},
                                {"changed", &changed}})
    std::printf(
        "%-9s heavy sweeps %3lu  models %3lu  reads %3lu  parses %lu  compiles %lu  "
        "qos-setup builds %lu\n",
        name, static_cast<unsigned long>(number(*j, "qos_setup", "heavy_sweeps")),
        static_cast<unsigned long>(number(*j, "fabric", "models")),
        static_cast<unsigned long>(number(*j, "policy", "reads")),
        static_cast<unsigned long>(number(*j, "policy", "parses")),
        static_cast<unsigned long>(number(*j, "policy", "compiles")),
        static_cast<unsigned long>(number(*j, "qos_setup", "builds")));
  auto r = f.run_at(
      "node001", {"saquery", "-p", "--slid", f.lid_arg("node001"), "--dlid", f.lid_arg("node002")});
  auto records = testbed::parse_saquery_output(r.output);
  ASSERT_EQ(records.size(), 1u) << r.output;
  EXPECT_EQ(testbed::path_answer(records[0])->sl, 5);
}

// A port group naming a partition OpenSM does not have selects no port: the qos-setup scope on
// it programs nothing, which OpenSM's log now says (once, at INFO: OpenSM's default level shows
// it), not at every heavy sweep.
TEST(PluginPolicyFile, AQosSetupDiagnosticReachesOpenSmsLogOncePerPolicyVersion) {
  auto o = plugin_fabric_options("policy=@DIR@/plugin-policy.conf");
  o.files["plugin-policy.conf"] = setup_policy("Nope", 4);
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, kAnswering)) << f.opensm_log();
  const std::string said = "rdma-qos plugin: qos-setup: " + f.dir() + "/plugin-policy.conf:";
  const std::string what = "warning: port group 'Tenant': partition 'Nope' does not exist";
  ASSERT_TRUE(wait_for_log(f, what)) << f.opensm_log();
  nlohmann::json s = stats_when(
      f, [](const nlohmann::json& j) { return number(j, "qos_setup", "heavy_sweeps") >= 1; });
  s = heavy_sweep(f, s);
  s = heavy_sweep(f, s);
  const std::string log = f.opensm_log();
  size_t lines = 0;
  for (size_t at = log.find(said); at != std::string::npos; at = log.find(said, at + 1)) {
    const std::string line = log.substr(at, log.find('\n', at) - at);
    EXPECT_NE(line.find(what), std::string::npos) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  // The policy's own warning (the engine's compilation, which reads OpenSM's partitions file)
  // is said once too.
  EXPECT_EQ(count(log, "port-group 'Tenant': partition 'Nope' does not exist"), 1u) << log;

  // A new version of the file: said again, once.
  std::ofstream(f.dir() + "/plugin-policy.conf") << setup_policy("Nope", 5);
  s = heavy_sweep(f, s);
  s = heavy_sweep(f, s);
  EXPECT_EQ(count(f.opensm_log(), said), 2u) << f.opensm_log();
}

}  // namespace
}  // namespace rdmaqos::osmp
