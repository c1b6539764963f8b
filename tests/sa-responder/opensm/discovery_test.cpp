// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric discovery against ibsim after OpenSM configured it: `rdma-qos-sad --dump-fabric --json`
// runs at sm01 (umad2sim is an LD_PRELOAD interposer, so discovery runs in its own process) and
// its model is compared with the topology the test built (GUIDs, LIDs and link rates fixed by
// make_fat_tree). Then the incremental re-discovery (--previous) on a mid-size fat tree whose
// links are taken down and up, and a CA plugged in, through ibsim's console: its model is the
// full discovery's, JSON for JSON, and a daemon re-discovering that way answers accordingly.
// Last, a node that answers no SMP behind a live link, as a port M_Key-protected at level 2 or 3
// does to a discovery without its M_Key: the daemon refuses to start.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace rdmaqos::sad {
namespace {

using nlohmann::json;
using testbed::IbFabric;
using testbed::TopoNode;

uint64_t hex(const json& j) {
  return std::stoull(j.get<std::string>(), nullptr, 16);
}

// The JSON line of the tool's output (umad2sim may add lines of its own).
json dump_line(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '{') return json::parse(line);
  }
  ADD_FAILURE() << "no JSON in:\n" << output;
  return json::object();
}

class DiscoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fabric_ = new IbFabric(testbed::fabric_options(testbed::make_fat_tree({})));
    auto r = fabric_->run_at(fabric_->topology().sm_node().id,
                             {RDMA_QOS_SAD, "--dump-fabric", "--json"}, std::chrono::seconds(60));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    output_ = new std::string(r.output);
    dump_ = new json(dump_line(r.output));
  }
  static void TearDownTestSuite() {
    delete dump_;
    delete output_;
    delete fabric_;
    dump_ = nullptr;
    fabric_ = nullptr;
  }

  // The dumped node with this node GUID.
  static const json* node(uint64_t guid) {
    for (const json& n : (*dump_)["nodes"])
      if (hex(n["guid"]) == guid) return &n;
    return nullptr;
  }

  static IbFabric* fabric_;
  static json* dump_;
  static std::string* output_;
};

IbFabric* DiscoveryTest::fabric_ = nullptr;
json* DiscoveryTest::dump_ = nullptr;
std::string* DiscoveryTest::output_ = nullptr;

TEST_F(DiscoveryTest, FindsEveryNodeOfTheTopology) {
  ASSERT_TRUE(dump_->contains("nodes"));
  EXPECT_EQ((*dump_)["nodes"].size(), fabric_->topology().nodes.size());
  for (const TopoNode& t : fabric_->topology().nodes) {
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    EXPECT_EQ((*n)["type"], t.kind == testbed::NodeKind::kSwitch ? 2 : 1) << t.id;
  }
}

TEST_F(DiscoveryTest, LidsAndPortGuidsAreTheAssignedOnes) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    int wanted_port = t.kind == testbed::NodeKind::kSwitch ? 0 : 1;
    bool found = false;
    for (const json& p : (*n)["ports"]) {
      if (p["port"] != wanted_port) continue;
      found = true;
      EXPECT_EQ(p["lid"], t.lid) << t.id;
      EXPECT_EQ(hex(p["guid"]), t.port_guid) << t.id;
    }
    EXPECT_TRUE(found) << t.id;
  }
}

TEST_F(DiscoveryTest, CaPortRatesFollowTheLinkOptions) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    if (t.kind != testbed::NodeKind::kCa) continue;
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr) << t.id;
    for (const json& p : (*n)["ports"])
      if (p["port"] == 1) {
        EXPECT_EQ(p["rate"], testbed::link_rate_code(t.link)) << t.id;
      }
  }
}

// Progress comes before the model: the size of the topology, then the end (the daemon logs
// these lines, and its re-discovery time limit counts from the last one).
TEST_F(DiscoveryTest, ReportsProgressBeforeTheModel) {
  const std::string& out = *output_;
  auto topology = out.find("discovery: topology: 13 nodes (4 switches)");
  auto done = out.find("discovery: done: 13 endpoints, 0 table(s) missing, 0 SMP(s) sent again");
  auto model = out.find("\n{");
  ASSERT_NE(topology, std::string::npos) << out.substr(0, 2000);
  ASSERT_NE(done, std::string::npos) << out.substr(0, 2000);
  EXPECT_LT(topology, done);
  EXPECT_LT(done, model);
}

TEST_F(DiscoveryTest, CaPortsHoldTheDefaultPartitionAsFullMembers) {
  for (const TopoNode& t : fabric_->topology().nodes) {
    if (t.kind != testbed::NodeKind::kCa) continue;
    const json* n = node(t.node_guid);
    ASSERT_NE(n, nullptr);
    for (const json& p : (*n)["ports"])
      if (p["port"] == 1) {
        EXPECT_EQ(p["pkeys"], json::array({0xFFFF})) << t.id;
      }
  }
}

TEST_F(DiscoveryTest, EveryEndpointIsReachableFromTheSmPort) {
  // The rate of a path from sm01 (4x QDR, uplinks 4x QDR) to a CA is that CA's link rate
  // whenever the CA's link is the slowest; to a switch it is port 0's 4x SDR (10G).
  std::map<uint16_t, const TopoNode*> by_lid;
  for (const TopoNode& t : fabric_->topology().nodes) by_lid[t.lid] = &t;
  ASSERT_EQ((*dump_)["paths"].size(), fabric_->topology().nodes.size());
  for (const json& path : (*dump_)["paths"]) {
    uint16_t dlid = path["dlid"];
    ASSERT_TRUE(by_lid.count(dlid)) << dlid;
    const TopoNode& t = *by_lid[dlid];
    EXPECT_TRUE(path["reachable"].get<bool>()) << t.id;
    if (!path["reachable"].get<bool>()) continue;
    if (t.kind == testbed::NodeKind::kSwitch) {
      EXPECT_EQ(path["rate"], 3) << t.id;
      EXPECT_EQ(path["mtu"], 3) << t.id;  // ibsim: switch port 0 MTUCap 1024
    } else {
      EXPECT_EQ(path["mtu"], 4) << t.id;  // ibsim: 2048 on CA and switch external ports
      int link = testbed::link_rate_code(t.link);
      // Links faster than 40G (12x DDR, 60G) are capped by the 40G uplinks: 40G (code 7).
      int expected = testbed::link_gbps(t.link) > 40 ? 7 : link;
      EXPECT_EQ(path["rate"], expected) << t.id;
    }
  }
}

TEST_F(DiscoveryTest, OpenSmWithQosMapsNoDataSlToVl15) {
  for (const json& path : (*dump_)["paths"]) {
    if (!path["reachable"].get<bool>()) continue;
    // OpenSM's default SL2VL with QoS maps SL 15 to VL 15 on some ports at most; SL 0 always
    // reaches a data VL.
    EXPECT_TRUE(path["valid_sls"].get<int>() & 1) << path.dump();
  }
  EXPECT_TRUE((*dump_)["missing"].empty()) << (*dump_)["missing"].dump();
}

// --- the incremental re-discovery ---

using namespace std::chrono_literals;

// 48 CAs, 12 a leaf: leaves 02..04 have port 1 free (leaf01's is sm01's). node099 is in ibsim's
// topology without a link: a host not yet cabled.
IbFabric* start_mid_size_fabric() {
  testbed::FatTreeSpec spec;
  spec.cas = 48;
  spec.cas_per_leaf = 12;
  spec.spines = 2;
  auto o = testbed::fabric_options(testbed::make_fat_tree(spec));
  o.ibsim_console = true;
  // Its log tells when a sweep is over; and it must not query SMInfo of the daemon's port,
  // which holds issm (as ibsim needs to deliver it requests) but answers no SMInfo: OpenSM's
  // sweep would wait for that answer.
  o.opensm_conf = "force_log_flush TRUE\nignore_other_sm TRUE\n";
  o.topology.netfile += "caguid=0x0002c90300ee0000\nCa 1 \"node099\" # \"node099 HCA-1\"\n\n";
  o.topology.port_count += 2;
  return new IbFabric(o);
}

size_t count_lines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Runs `change` on the fabric and waits until OpenSM has swept it in: a heavy sweep (SIGHUP, in
// case ibsim's trap is lost) ended with SUBNET UP and no other followed for two seconds.
void change_and_settle(IbFabric& f, const std::function<void()>& change) {
  const size_t ups = count_lines(f.opensm_log(), "SUBNET UP");
  change();
  ::kill(f.pids().back(), SIGHUP);
  for (int i = 0; i < 300 && count_lines(f.opensm_log(), "SUBNET UP") <= ups; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_GT(count_lines(f.opensm_log(), "SUBNET UP"), ups) << f.opensm_log();
  for (size_t seen = count_lines(f.opensm_log(), "SUBNET UP");;) {
    std::this_thread::sleep_for(2s);
    const size_t now = count_lines(f.opensm_log(), "SUBNET UP");
    if (now == seen) break;
    seen = now;
  }
}

struct Dump {
  std::string line;  // the model's JSON line
  std::string progress;
};

// `rdma-qos-sad --dump-fabric --json` at sm01; with `previous`, incrementally against it.
Dump dump_at_sm(const IbFabric& f, const std::string& previous = {}) {
  std::vector<std::string> argv = {RDMA_QOS_SAD, "--dump-fabric", "--json"};
  if (!previous.empty()) {
    std::ofstream(f.dir() + "/previous.json") << previous << "\n";
    argv.insert(argv.end(), {"--previous", f.dir() + "/previous.json"});
  }
  auto r = f.run_at(f.topology().sm_node().id, argv, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  Dump d;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') {
      d.line = line;
    } else {
      d.progress += line + "\n";
    }
  }
  EXPECT_FALSE(d.line.empty()) << r.output.substr(0, 4000);
  return d;
}

// Where two models differ, briefly (a JSON patch's first operations).
std::string difference(const std::string& a, const std::string& b) {
  auto patch = json::diff(json::parse(a), json::parse(b));
  std::string out;
  for (size_t i = 0; i < patch.size() && i < 5; ++i) out += patch[i].dump().substr(0, 300) + "\n";
  return out;
}

bool has_node(const std::string& line, uint64_t guid) {
  const json model = json::parse(line);
  for (const json& n : model["nodes"])
    if (hex(n["guid"]) == guid) return true;
  return false;
}

// The incremental model after each change equals the full discovery's, and says what changed.
TEST(IncrementalDiscoveryOnIbsim, FollowsLinksDownAndUpAndANewNodeAsAFullDiscoveryDoes) {
  std::unique_ptr<IbFabric> f(start_mid_size_fabric());
  const uint64_t node005 = f->topology().node("node005").node_guid;
  constexpr uint64_t kNode099 = 0x0002c90300ee0000;
  Dump before = dump_at_sm(*f);
  ASSERT_TRUE(has_node(before.line, node005));

  // Nothing changed: no table read, the same model.
  Dump same = dump_at_sm(*f, before.line);
  EXPECT_EQ(same.line, before.line) << difference(before.line, same.line);
  EXPECT_NE(same.progress.find("discovery: incremental: no change"), std::string::npos)
      << same.progress;
  EXPECT_NE(same.progress.find(" 0 of "), std::string::npos) << same.progress;

  // A CA's link down: OpenSM drops the CA and re-routes.
  ASSERT_NO_FATAL_FAILURE(change_and_settle(*f, [&] { f->ibsim_command("Unlink \"node005\""); }));
  Dump down = dump_at_sm(*f, before.line);
  Dump down_full = dump_at_sm(*f);
  EXPECT_EQ(down.line, down_full.line) << difference(down_full.line, down.line) << down.progress;
  EXPECT_FALSE(has_node(down.line, node005));
  EXPECT_NE(down.progress.find("0 node(s) added, 1 gone"), std::string::npos) << down.progress;
  EXPECT_EQ(down.progress.find("a full discovery instead"), std::string::npos) << down.progress;

  // Up again: its tables and the leaf port's are read again, nothing else.
  ASSERT_NO_FATAL_FAILURE(change_and_settle(*f, [&] { f->ibsim_command("ReLink \"node005\""); }));
  Dump up = dump_at_sm(*f, down.line);
  Dump up_full = dump_at_sm(*f);
  EXPECT_EQ(up.line, up_full.line) << difference(up_full.line, up.line) << up.progress;
  EXPECT_TRUE(has_node(up.line, node005));
  EXPECT_NE(up.progress.find("1 node(s) added, 0 gone"), std::string::npos) << up.progress;

  // A host cabled in: a node the model never had, read in full.
  ASSERT_NO_FATAL_FAILURE(
      change_and_settle(*f, [&] { f->ibsim_command("Link \"leaf02\"[1] \"node099\"[1]"); }));
  Dump added = dump_at_sm(*f, up.line);
  Dump added_full = dump_at_sm(*f);
  EXPECT_EQ(added.line, added_full.line)
      << difference(added_full.line, added.line) << added.progress;
  EXPECT_TRUE(has_node(added.line, kNode099));
  EXPECT_EQ(added.progress.find("a full discovery instead"), std::string::npos) << added.progress;

  // A model of another node (the first one, sm01's, given at node001): a full discovery.
  auto r = f->run_at(
      "node001",
      {RDMA_QOS_SAD, "--dump-fabric", "--json", "--previous", f->dir() + "/previous.json"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("discovery: incremental: discovery runs at node"), std::string::npos)
      << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find(": a full discovery instead"), std::string::npos)
      << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("discovery: done: "), std::string::npos) << r.output.substr(0, 4000);
}

// The daemon (at node048, beside OpenSM, no policy) re-discovers incrementally on request and
// answers for the fabric as it is: no path to a CA whose link went down, a path again once it is
// back; every third re-discovery (--full-rediscover-every 3) and `rediscover --full` read the
// whole fabric.
// The SM's traps are off: they would start re-discoveries of their own, which a request joins or
// follows depending on timing, and the third one counted would not be the test's third.
TEST(IncrementalDiscoveryOnIbsim, TheDaemonsAnswersFollowAnIncrementalRediscovery) {
  std::unique_ptr<IbFabric> f(start_mid_size_fabric());
  const std::string node = "node048";
  const std::string our_lid = f->lid_arg(node);
  const std::string socket = f->dir() + "/sad.sock";
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_SAD,
            "--no-policy",
            "--control-socket",
            socket,
            "--foreground",
            "--rediscover-interval",
            "0",
            "--full-rediscover-every",
            "3",
            "--sm-traps",
            "off"};
  p.env = f->client_env(node);
  p.cwd = f->dir();
  p.output_path = f->dir() + "/sad.log";
  auto started = f->start_until_answering(p, {RDMA_QOS_CLI, "path", "cpi", "--sa-lid", our_lid});
  std::unique_ptr<testbed::Process> sad = std::move(started.daemon);
  ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
  auto log = [&] {
    std::ifstream in(f->dir() + "/sad.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // Paths from node001 to `to` that our SA answers.
  auto paths_to = [&](const std::string& to) -> int {
    testbed::ProcessOptions q;
    q.argv = {RDMA_QOS_CLI,   "path",  "--json",   "--dlid",
              f->lid_arg(to), "--get", "--sa-lid", our_lid};
    q.env = f->client_env("node001");
    q.cwd = f->dir();
    testbed::RunResult r = testbed::run(q, 20s);
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '{') continue;
      auto j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("paths")) return static_cast<int>(j["paths"].size());
    }
    return 0;
  };
  auto rediscover = [&](std::vector<std::string> extra = {}) {
    testbed::ProcessOptions c;
    c.argv = {RDMA_QOS_CLI, "sad", "rediscover", "--json", "--socket", socket};
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    c.cwd = f->dir();
    testbed::RunResult r = testbed::run(c, 120s);
    EXPECT_EQ(r.exit_code, 0) << r.output << log();
    auto j =
        json::parse(r.output.substr(std::min(r.output.find('{'), r.output.size())), nullptr, false);
    return j.is_discarded() ? std::string() : j.value("message", std::string());
  };
  const size_t nodes = f->topology().nodes.size();  // node099, without a link, is not one
  ASSERT_EQ(paths_to("node005"), 1);

  ASSERT_NO_FATAL_FAILURE(change_and_settle(*f, [&] { f->ibsim_command("Unlink \"node005\""); }));
  EXPECT_EQ(rediscover(),
            fmt::format("fabric re-discovered: {} endpoints (incremental)", nodes - 1));
  EXPECT_EQ(paths_to("node005"), 0);
  EXPECT_EQ(paths_to("node006"), 1);

  ASSERT_NO_FATAL_FAILURE(change_and_settle(*f, [&] { f->ibsim_command("ReLink \"node005\""); }));
  EXPECT_EQ(rediscover(), fmt::format("fabric re-discovered: {} endpoints (incremental)", nodes));
  EXPECT_EQ(paths_to("node005"), 1);

  // The third since the full one at start reads the whole fabric (--full-rediscover-every 3),
  // the next is incremental again; --full asks for a full one.
  EXPECT_EQ(rediscover(), fmt::format("fabric re-discovered: {} endpoints (full)", nodes));
  EXPECT_EQ(rediscover(), fmt::format("fabric re-discovered: {} endpoints (incremental)", nodes));
  EXPECT_EQ(rediscover({"--full"}),
            fmt::format("fabric re-discovered: {} endpoints (full)", nodes));
  const std::string text = log();
  EXPECT_NE(text.find("re-discovery: incremental: 0 node(s) added, 1 gone"), std::string::npos)
      << text;
  EXPECT_NE(text.find("re-discovery: topology: "), std::string::npos) << text;  // the full one
  sad->stop();
}

// ibsim keeps no M_Key (its SMA checks none), so a port M_Key-protected at level 2 or 3 cannot be
// set up there; what such a port does to a discovery without its M_Key, answer no SMP, can: a CA
// whose every port drops what it receives (ibsim's `Error "node" 100`). The daemon names the
// switch port in front of it and --m-key, and does not start (78, as for other configuration).
TEST(MKeyOnIbsim, ANodeSilentBehindALiveLinkStopsTheStart) {
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.ibsim_console = true;
  IbFabric f(o);
  f.ibsim_command("Error \"node005\" 100");
  auto r = f.run_at(f.topology().sm_node().id,
                    {RDMA_QOS_SAD, "--no-policy", "--foreground", "--control-socket", ""}, 120s);
  EXPECT_EQ(r.exit_code, 78) << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("1 live link with no node answering behind it"), std::string::npos)
      << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("the link is up, but the node behind it (directed route 0,"),
            std::string::npos)
      << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("give the subnet's M_Key with --m-key"), std::string::npos);
  EXPECT_EQ(r.output.find("answering at"), std::string::npos);

  // --dump-fabric prints no model either; given an M_Key, it says that key is not theirs.
  auto dump = f.run_at(f.topology().sm_node().id,
                       {RDMA_QOS_SAD, "--dump-fabric", "--json", "--m-key", "0x1234"}, 120s);
  EXPECT_EQ(dump.exit_code, 78) << dump.output.substr(0, 4000);
  EXPECT_EQ(dump.output.find("\n{"), std::string::npos);
  EXPECT_NE(dump.output.find("is not theirs"), std::string::npos) << dump.output.substr(0, 4000);

  // Answering again, the node is discovered, with the M_Key on every SMP (ibsim ignores it).
  f.ibsim_command("Error \"node005\" 0");
  auto again = f.run_at(f.topology().sm_node().id,
                        {RDMA_QOS_SAD, "--dump-fabric", "--json", "--m-key", "0x1234"}, 120s);
  EXPECT_EQ(again.exit_code, 0) << again.output.substr(0, 4000);
}

}  // namespace
}  // namespace rdmaqos::sad
