// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PolicySource: a file is read again only when it changed (its identity, or a read too close to
// its last change to trust the times), the policy parsed once per text; and the plugin's two
// users, the engine's model rebuild and the qos-setup hooks of a heavy sweep, share one read
// and one parse. The qos-setup scopes are built again only when the policy text or OpenSM's
// partitions change, and their diagnostics are logged once per policy version.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "qos_apply.h"  // opensm-plugin/src (rdmaqos::opensm_qos_apply's include directory)
#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/opensm-plugin/plugin.h"
#include "rdma-qos/opensm-plugin/policy_source.h"
#include "tiny_subnet.h"

namespace rdmaqos::osmp {
namespace {

std::string policy_with_sl(int sl) {
  return "qos-levels\nqos-level\nname: DEFAULT\nsl: " + std::to_string(sl) +
         "\nend-qos-level\nend-qos-levels\n";
}

// A qos-setup scope on a port group that names a partition, `partition`.
std::string setup_policy(const std::string& partition, int sl = 0) {
  return "port-groups\nport-group\nname: Tenant\npartition: " + partition +
         "\nend-port-group\nend-port-groups\n"
         "qos-setup\nsl2vl-tables\nsl2vl-scope\ngroup: Tenant\n"
         "sl2vl-table: 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3\nend-sl2vl-scope\nend-sl2vl-tables\n"
         "end-qos-setup\n" +
         policy_with_sl(sl);
}

class PolicySourceTest : public ::testing::Test {
 protected:
  // One file per test: ctest runs the tests of this fixture in parallel processes.
  std::string path = ::testing::TempDir() + "/policy-source-test-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".conf";

  void TearDown() override { std::remove(path.c_str()); }
  void write(const std::string& text) { std::ofstream(path) << text; }
  // The file's modification time an hour back: its times then vouch for the next read.
  void age() {
    timespec times[2];
    clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= 3600;
    times[1] = times[0];
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  PolicySource source() {
    Options o;
    o.policy = path;
    return PolicySource(o, OsmConfig{});
  }
};

TEST_F(PolicySourceTest, AnUnchangedFileIsNeitherReadNorParsedAgain) {
  write(policy_with_sl(4));
  age();
  PolicySource s = source();
  auto first = s.current();
  ASSERT_TRUE(first->policy && first->policy->text && first->parsed);
  EXPECT_TRUE(first->parsed->ok());
  EXPECT_EQ(s.reads(), 1u);
  EXPECT_EQ(s.parses(), 1u);
  // The read came an hour after the last change: the times vouch for the text.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.current(), first);
  EXPECT_EQ(s.reads(), 1u);
  EXPECT_EQ(s.parses(), 1u);
}

TEST_F(PolicySourceTest, AFileJustWrittenIsReadAgainButParsedOnlyWhenItsTextChanged) {
  write(policy_with_sl(4));
  PolicySource s = source();
  auto first = s.current();
  // Written a moment ago: a write in the same tick would leave the times alone, so the text is
  // read again and compared; the same text is the same snapshot.
  EXPECT_EQ(s.current(), first);
  EXPECT_EQ(s.reads(), 2u);
  EXPECT_EQ(s.parses(), 1u);
  // The same size, another text, within the clock's granularity as likely as not: still seen.
  write(policy_with_sl(6));
  auto second = s.current();
  EXPECT_NE(second, first);
  EXPECT_NE(second->policy_version(), first->policy_version());
  EXPECT_EQ(s.parses(), 2u);
  EXPECT_EQ(second->parsed->policy.levels.at(0).sl, 6);
}

TEST_F(PolicySourceTest, AChangedFileIsSeenEvenWithItsOldTimes) {
  write(policy_with_sl(4));
  age();
  PolicySource s = source();
  auto first = s.current();
  write(policy_with_sl(5));
  age();  // the modification time put back; the change time still moved
  auto second = s.current();
  EXPECT_NE(second->policy_version(), first->policy_version());
  EXPECT_EQ(second->parsed->policy.levels.at(0).sl, 5);
}

TEST_F(PolicySourceTest, AForcedReadReadsButKeepsTheVersionOfTheSameText) {
  write(policy_with_sl(4));
  age();
  PolicySource s = source();
  auto first = s.current();
  EXPECT_EQ(s.current(true), first);
  EXPECT_EQ(s.reads(), 2u);
  EXPECT_EQ(s.parses(), 1u);
}

TEST_F(PolicySourceTest, AnUnreadableFileSaysWhyAndComesBack) {
  PolicySource s = source();
  auto missing = s.current();
  ASSERT_TRUE(missing->policy);
  EXPECT_FALSE(missing->policy->text);
  EXPECT_FALSE(missing->readable());
  ASSERT_TRUE(missing->policy->error.has_value());
  EXPECT_EQ(missing->policy->error->code, ErrorCode::kNotFound);
  EXPECT_EQ(missing->parsed, nullptr);
  write(policy_with_sl(4));
  auto back = s.current();
  EXPECT_TRUE(back->readable());
  EXPECT_TRUE(back->parsed && back->parsed->ok());
}

// The engine and the qos-setup hooks of one plugin (the C handle OpenSM's side holds), as
// OpenSM drives them: a heavy sweep starts (qos-setup), the first table resolves the partition
// names, the sweep ends (the engine's model).
class SharedPolicyTest : public PolicySourceTest {
 protected:
  void SetUp() override {
    const std::string options = "policy=" + path + " control-socket=none";
    plugin_ = rdma_qos_osmp_create(options.c_str(), nullptr, remember, feed, nullptr, this);
    ASSERT_NE(plugin_, nullptr);
    qa_ = rdma_qos_qa_new(plugin_, remember, this);
    ASSERT_NE(qa_, nullptr);
  }
  void TearDown() override {
    rdma_qos_qa_free(qa_);
    rdma_qos_osmp_destroy(plugin_);
    PolicySourceTest::TearDown();
  }
  static int feed(void*, rdma_qos_osmp_builder* b) {
    testing::feed_tiny_subnet(*reinterpret_cast<FabricBuilder*>(b));
    return 0;
  }
  static void remember(void* ctx, int error, const char* line) {
    static_cast<SharedPolicyTest*>(ctx)->lines.push_back({error != 0, line});
  }
  // One heavy sweep with OpenSM's partitions `partitions` (name -> P_Key).
  int sweep(const std::vector<std::pair<std::string, uint16_t>>& partitions) {
    const int r = rdma_qos_qa_load(qa_, 0x0A1, 1);
    std::vector<const char*> names;
    std::vector<uint16_t> pkeys;
    for (const auto& [name, pkey] : partitions) {
      names.push_back(name.c_str());
      pkeys.push_back(pkey);
    }
    rdma_qos_qa_set_partitions(qa_, names.data(), pkeys.data(), names.size());
    engine().rebuild();
    return r;
  }
  Engine& engine() { return engine_of(plugin_); }
  nlohmann::json stats() { return engine().stats(); }
  size_t said(const std::string& text) const {
    size_t n = 0;
    for (const auto& [error, line] : lines) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

  rdma_qos_osmp* plugin_ = nullptr;
  rdma_qos_qa* qa_ = nullptr;
  std::vector<std::pair<bool, std::string>> lines;
};

TEST_F(SharedPolicyTest, OneReadAndOneParseServeTheAnswersAndTheQosSetup) {
  write(setup_policy("Tenant1", 4));
  age();
  EXPECT_EQ(sweep({{"Default", 0x7FFF}, {"Tenant1", 0x10}}), 1);
  nlohmann::json s = stats();
  EXPECT_EQ(s["policy"]["reads"], 1) << s.dump();
  EXPECT_EQ(s["policy"]["parses"], 1) << s.dump();
  EXPECT_EQ(s["policy"]["compiles"], 1) << s.dump();
  EXPECT_EQ(s["qos_setup"]["heavy_sweeps"], 1) << s.dump();
  // Built at the sweep's start, and once more when the first table gave the partitions.
  EXPECT_EQ(s["qos_setup"]["builds"], 2) << s.dump();
  EXPECT_EQ(s["qos_setup"]["scopes"], 1) << s.dump();

  // Sweeps with nothing changed read, parse, compile and build nothing.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sweep({{"Default", 0x7FFF}, {"Tenant1", 0x10}}), 1);
  s = stats();
  EXPECT_EQ(s["policy"]["reads"], 1) << s.dump();
  EXPECT_EQ(s["policy"]["parses"], 1) << s.dump();
  EXPECT_EQ(s["policy"]["compiles"], 1) << s.dump();
  EXPECT_EQ(s["policy"]["compiles_skipped"], 3) << s.dump();
  EXPECT_EQ(s["qos_setup"]["heavy_sweeps"], 4) << s.dump();
  EXPECT_EQ(s["qos_setup"]["builds"], 2) << s.dump();

  // A new policy text: one read and one parse for both, the scopes built once (OpenSM's
  // partitions are known by now), the policy compiled once.
  write(setup_policy("Tenant1", 6));
  age();
  EXPECT_EQ(sweep({{"Default", 0x7FFF}, {"Tenant1", 0x10}}), 1);
  s = stats();
  EXPECT_EQ(s["policy"]["reads"], 2) << s.dump();
  EXPECT_EQ(s["policy"]["parses"], 2) << s.dump();
  EXPECT_EQ(s["policy"]["compiles"], 2) << s.dump();
  EXPECT_EQ(s["qos_setup"]["builds"], 3) << s.dump();

  // New partitions: the scopes again, from the policy as parsed (no parse).
  EXPECT_EQ(sweep({{"Default", 0x7FFF}, {"Tenant1", 0x11}}), 1);
  s = stats();
  EXPECT_EQ(s["policy"]["parses"], 2) << s.dump();
  EXPECT_EQ(s["qos_setup"]["builds"], 4) << s.dump();
}

TEST_F(SharedPolicyTest, AScopeDiagnosticIsLoggedOncePerPolicyVersion) {
  write(setup_policy("Nope", 4));
  age();
  for (int i = 0; i < 3; ++i) sweep({{"Default", 0x7FFF}, {"Tenant1", 0x10}});
  // Once from the scopes, once from the engine's compiled policy (which knows no partition of
  // that name either: no partitions file here).
  EXPECT_EQ(said("partition 'Nope' does not exist"), 2u) << ::testing::PrintToString(lines);
  size_t scopes_said = 0;
  for (const auto& [error, line] : lines) {
    if (line.rfind("qos-setup: " + path + ":", 0) != 0) continue;
    ++scopes_said;
    EXPECT_FALSE(error) << line;  // a warning: OpenSM's log at INFO
    EXPECT_NE(line.find("warning: port group 'Tenant': partition 'Nope' does not exist"),
              std::string::npos)
        << line;
  }
  EXPECT_EQ(scopes_said, 1u) << ::testing::PrintToString(lines);
  // Before the partitions came, the scopes had nothing to resolve the name with: no warning
  // of that (every OpenSM has partitions).
  EXPECT_EQ(said("without the partitions"), 0u) << ::testing::PrintToString(lines);

  // A new version of the file says it again, once.
  write(setup_policy("Nope", 5));
  age();
  for (int i = 0; i < 2; ++i) sweep({{"Default", 0x7FFF}, {"Tenant1", 0x10}});
  EXPECT_EQ(said("partition 'Nope' does not exist"), 4u) << ::testing::PrintToString(lines);
}

// A partition group that no qos-setup scope names is the answers' business (they resolve it
// with the partitions file): the scopes say nothing of it.
TEST_F(SharedPolicyTest, APartitionGroupNoScopeNamesIsNotTheScopesConcern) {
  write(
      "port-groups\nport-group\nname: Tenant\npartition: Tenant1\nend-port-group\n"
      "port-group\nname: Hosts\nnode-type: CA\nend-port-group\nend-port-groups\n"
      "qos-setup\nsl2vl-tables\nsl2vl-scope\ngroup: Hosts\n"
      "sl2vl-table: 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3\nend-sl2vl-scope\nend-sl2vl-tables\n"
      "end-qos-setup\n" +
      policy_with_sl(4));
  age();
  EXPECT_EQ(sweep({{"Default", 0x7FFF}}), 1);
  for (const auto& [error, line] : lines)
    EXPECT_NE(line.rfind("qos-setup: " + path + ":", 0), 0u) << line;
  EXPECT_EQ(said("without the partitions"), 0u) << ::testing::PrintToString(lines);
}

TEST_F(SharedPolicyTest, ABrokenPolicyIsSaidOncePerVersionAndTheScopesStay) {
  write(setup_policy("Tenant1", 4));
  age();
  ASSERT_EQ(sweep({{"Tenant1", 0x10}}), 1);
  write("qos-levels\n");
  age();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rdma_qos_qa_load(qa_, 0x0A1, 1), -1);
  EXPECT_EQ(said("has errors; the previous tables stay"), 1u) << ::testing::PrintToString(lines);
  EXPECT_EQ(stats()["qos_setup"]["scopes"], 1);
}

}  // namespace
}  // namespace rdmaqos::osmp
