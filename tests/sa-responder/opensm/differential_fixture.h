// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The differential fixture: rdma-qos-sad against OpenSM on the same ibsim fabric, policy,
// partitions, opensm.conf and queries. OpenSM configures the fabric and answers every query
// first (through unmodified `saquery`, our `rdma-qos path --json`, or raw MAD bytes sent by
// sa-raw-mad); then OpenSM stops, rdma-qos-sad takes over the SM's port at sm01 and must give
// the same answers, field by field, or the same absence of a record or MAD status. Each suite
// sets its fabric up once (ctest runs each suite as one test) and asks it many queries.
// OpenSM's answers to a suite are asked once per build tree (opensm_answers.h): the plugin's
// build of the same suites reads those rdma-qos-sad's run wrote, or the other way round.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "opensm_answers.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/raw_mad.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::sad::differential {

using testbed::IbFabric;
using testbed::IbFabricOptions;
using testbed::RunResult;

// Levels whose limits bind on the fat tree's mixed links (40, 20, 2.5, 10 and 60 Gb/s CAs):
// rate limits of 5 and 20 Gb/s, MTU limits below 2048, packet lives, and an SL.
inline const std::string kPolicy = testbed::sample_policy({.slow = true, .sdp_ulp = false});

struct Query {
  std::string from;               // node that runs the client
  std::vector<std::string> args;  // client arguments
  bool cli = false;               // `rdma-qos path ... --json` instead of saquery
  bool raw = false;               // sa-raw-mad: args[0] is the MAD in hex
  // A documented deliberate difference: OpenSM does not answer, rdma-qos-sad answers with this
  // MAD status ("0x000c"). compare_all skips it; the suite checks it on its own.
  std::string deliberate = {};
};

struct Outcome {
  int exit_code = -1;
  std::vector<testbed::SaRecord> records;  // saquery
  nlohmann::json json;                     // rdma-qos path: paths, or the error and MAD status
  std::string output;
};

// One fabric, policy and partitions, and the queries asked of both SAs.
struct Scenario {
  std::string policy;  // empty: OpenSM without -Y, rdma-qos-sad --no-policy
  std::string partitions;
  std::vector<Query> (*queries)();
  int lmc = 0;  // OpenSM's LMC, and the topology's LIDs aligned for it
  // opensm.conf text given to OpenSM (-F) and to rdma-qos-sad (--opensm-conf); empty: none.
  std::string opensm_conf = {};
  // The fat tree; empty: make_fat_tree({}) (its LMC is the scenario's).
  std::optional<testbed::FatTreeSpec> tree = {};
};

class SadDifferential : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start({kPolicy, "", make_queries}); }

  static void start(const Scenario& scenario) {
    testbed::FatTreeSpec spec = scenario.tree.value_or(testbed::FatTreeSpec{});
    spec.lmc = scenario.lmc;
    IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree(spec));
    o.lmc = scenario.lmc;
    o.policy = scenario.policy;
    o.partitions = scenario.partitions;
    // OpenSM writes its log as it goes (the wait for its first sweep below reads it).
    o.opensm_conf = scenario.opensm_conf + "\nforce_log_flush TRUE\n";
    topology_ = new testbed::Topology(o.topology);
    queries_ = new std::vector<Query>(scenario.queries());
    opensm_ = new std::vector<Outcome>();
    {
      // OpenSM's answers: asked here, or read from the other front end's run of this suite.
      OpenSmAnswers cache(RDMA_QOS_OPENSM_ANSWERS_DIR, identity(o));
      if (auto known = cache.load(); known && known->size() == queries_->size()) {
        for (size_t i = 0; i < known->size(); ++i)
          opensm_->push_back(outcome((*queries_)[i], (*known)[i].first, (*known)[i].second));
      } else {
        fabric_ = new IbFabric(o);
        OpenSmAnswers::Answers asked;
        for (const Query& q : *queries_) {
          opensm_->push_back(run(q));
          asked.emplace_back(opensm_->back().exit_code, opensm_->back().output);
        }
        cache.store(asked);
      }
    }

#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
    start_plugin(o, scenario);
#else
    if (fabric_ == nullptr) {
      // OpenSM's answers came from the file: before rdma-qos-sad discovers the fabric, let
      // OpenSM finish its first sweep (SL2VL and VL arbitration tables come after the routes
      // the fabric's readiness probe needs), as the time it spent answering used to.
      fabric_ = new IbFabric(o);
      for (int i = 0; i < 300 && fabric_->opensm_log().find("SUBNET UP") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    start_sad(scenario);
#endif
  }

  // Everything OpenSM's answers depend on: the fabric's options and the queries.
  static std::string identity(const IbFabricOptions& o) {
    std::string s = OpenSmAnswers::identity(o);
    for (const Query& q : *queries_)
      s += fmt::format("query {} {} {} {}\n", q.from, q.cli, q.raw, fmt::join(q.args, "\x1f"));
    return s;
  }

#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
  // The third party: OpenSM once more on a fresh fabric (the same topology, LMC, policy,
  // partitions and opensm.conf) with the rdma-qos OpenSM plugin loaded. The plugin reads the
  // policy and partitions OpenSM reads (qos_policy_file, partition_config_file).
  static void start_plugin(IbFabricOptions o, const Scenario& scenario) {
    delete fabric_;
    fabric_ = nullptr;
    o.opensm_conf +=
        "\nforce_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
        "event_plugin_options control-socket=@DIR@/plugin.sock" +
        std::string(scenario.policy.empty() ? " policy=none" : "") + "\n";
    o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
    fabric_ = new IbFabric(o);
    bool answering = false;
    for (int i = 0; i < 200 && !answering; ++i) {
      answering = sad_log().find("rdma-qos plugin: answering") != std::string::npos;
      if (!answering) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(answering) << sad_log();
    ours_ = new std::vector<Outcome>();
    for (const Query& q : *queries_) ours_->push_back(run(q));
  }
#endif

  // The third party: rdma-qos-sad at the SM's port once OpenSM has configured the fabric and
  // stopped.
  static void start_sad(const Scenario& scenario) {
    fabric_->stop_sm();
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD, "--foreground", "--no-policy"};
    if (!scenario.policy.empty()) {
      std::string policy_path = fabric_->dir() + "/sad-policy.conf";
      std::ofstream(policy_path) << scenario.policy;
      p.argv = {RDMA_QOS_SAD, "--foreground", "--policy", policy_path};
    }
    if (!scenario.partitions.empty()) {
      std::string partitions_path = fabric_->dir() + "/sad-partitions.conf";
      std::ofstream(partitions_path) << scenario.partitions;
      p.argv.insert(p.argv.end(), {"--partitions", partitions_path});
    }
    if (!scenario.opensm_conf.empty()) {
      std::string conf_path = fabric_->dir() + "/sad-opensm.conf";
      std::ofstream(conf_path) << scenario.opensm_conf;
      p.argv.insert(p.argv.end(), {"--opensm-conf", conf_path});
    }
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    p.cwd = fabric_->dir();
    p.output_path = fabric_->dir() + "/sad.log";
    // Ready once ClassPortInfo is answered (discovery comes first).
    auto started = fabric_->start_until_answering(p, {"saquery", "-c"});
    sad_ = started.daemon.release();
    ASSERT_EQ(started.probe.exit_code, 0)
        << "saquery -c: " << started.probe.output << "\nrdma-qos-sad (exit "
        << sad_->wait_for(std::chrono::milliseconds(10)).value_or(-1) << "):\n"
        << sad_log();
    ours_ = new std::vector<Outcome>();
    for (const Query& q : *queries_) ours_->push_back(run(q));
  }

  static void TearDownTestSuite() {
    delete sad_;
    delete fabric_;
    delete topology_;
    topology_ = nullptr;
    delete queries_;
    delete opensm_;
    delete ours_;
    sad_ = nullptr;
    fabric_ = nullptr;
  }

  // The log of the third party (rdma-qos-sad's, or OpenSM's with the plugin's lines).
  static std::string sad_log() {
#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
    return fabric_->opensm_log();
#else
    std::ifstream in(fabric_->dir() + "/sad.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
#endif
  }

  // SIGHUP (reload) or SIGUSR1 (re-discover) to rdma-qos-sad; the same commands through the
  // plugin's control socket.
  static void signal_ours(int sig) {
#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", sig == SIGHUP ? "reload" : "rediscover", "--socket",
              fabric_->dir() + "/plugin.sock"};
    testbed::run(p, std::chrono::seconds(30));
#else
    ::kill(sad_->pid(), sig);
#endif
  }

  // The policy file the third party reads.
  static std::string our_policy_path() {
#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
    return fabric_->dir() + "/qos-policy.conf";
#else
    return fabric_->dir() + "/sad-policy.conf";
#endif
  }

  static Outcome run(const Query& q) {
    std::vector<std::string> argv = {"saquery"};
    if (q.cli) argv = {RDMA_QOS_CLI, "path", "--json"};
    if (q.raw) argv = {RDMA_QOS_SA_RAW_MAD};
    argv.insert(argv.end(), q.args.begin(), q.args.end());
    RunResult r = fabric_->run_at(q.from, argv);
    return outcome(q, r.exit_code, r.output);
  }

  // A client's exit code and output, read as that client prints its answer.
  static Outcome outcome(const Query& q, int exit_code, const std::string& output) {
    Outcome o{exit_code, {}, {}, output};
    if (q.cli || q.raw) {
      // The JSON line (umad2sim may print lines of its own); "sa_lid" differs by design
      // only if the SA moved, which it does not here.
      std::istringstream in(output);
      for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] == '{') o.json = nlohmann::json::parse(line, nullptr, false);
    } else {
      o.records = testbed::parse_saquery_output(output);
    }
    return o;
  }

  static std::string lid(const std::string& node, int offset = 0) {
    return std::to_string(topology_->node(node).lid + offset);
  }
  static std::string gid(const std::string& node) {
    uint64_t guid = topology_->node(node).port_guid;
    return fmt::format("fe80::{:x}:{:x}:{:x}:{:x}", guid >> 48, (guid >> 32) & 0xFFFF,
                       (guid >> 16) & 0xFFFF, guid & 0xFFFF);
  }

  static std::vector<Query> make_queries();  // the main suite's queries

  // Alternate-path requests (MultiPathRecord, two SGIDs, two DGIDs, NumbPath 2), asked by
  // node001: OpenSM orders each end's ports by GUID, starts at a LID offset hashed from the
  // first pair's LIDs and picks a diagonal by link count (or the first one when a pair has no
  // path). The shapes mix same-leaf and cross-leaf pairs, both request orders, a switch, a
  // loopback and ports whose links make `--rate =6` drop some pairs only.
  using Shape = std::pair<std::vector<std::string>, std::vector<std::string>>;
  static std::vector<Shape> apm_shapes() {
    return {
        {{"node001", "node005"}, {"node002", "node006"}},
        {{"node005", "node001"}, {"node006", "node002"}},
        {{"node001", "node002"}, {"node005", "node003"}},
        {{"node002", "node006"}, {"node005", "node007"}},
        {{"node001", "node002"}, {"node005", "node007"}},
        {{"node003", "node008"}, {"node004", "node001"}},
        {{"node001", "leaf01"}, {"node004", "node006"}},
        {{"node002", "node004"}, {"node002", "node001"}},
        {{"sm01", "node007"}, {"node008", "leaf02"}},
    };
  }
  static std::vector<Query> apm_queries(const std::vector<Shape>& shapes,
                                        const std::vector<std::vector<std::string>>& variants) {
    std::vector<Query> out;
    auto gids = [](const std::vector<std::string>& nodes) {
      return gid(nodes.at(0)) + "," + gid(nodes.at(1));
    };
    for (const auto& [sources, destinations] : shapes) {
      for (const auto& v : variants) {
        Query q{
            "node001",
            {"--mpr", "--sgids", gids(sources), "--dgids", gids(destinations), "--numb-path", "2"},
            true};
        q.args.insert(q.args.end(), v.begin(), v.end());
        out.push_back(q);
      }
    }
    return out;
  }
  static std::vector<Query> partition_queries();

  // Every query's answer (or refusal) from rdma-qos-sad equals OpenSM's; the query set must
  // give more than `min_answers` records and `min_refusals` refusals.
  static void compare_all(int min_answers, int min_refusals);

  static inline IbFabric* fabric_ = nullptr;
  // The suite's topology (the fabric's, known before any fabric starts: queries are built from
  // it).
  static inline const testbed::Topology* topology_ = nullptr;
  static inline testbed::Process* sad_ = nullptr;
  static inline std::vector<Query>* queries_ = nullptr;
  static inline std::vector<Outcome>* opensm_ = nullptr;
  static inline std::vector<Outcome>* ours_ = nullptr;
};

// The fat tree every suite runs on (make_fat_tree({})), for GUIDs, LIDs and names written into
// policies and MADs before the fabric starts (the generator is deterministic: the fabric gets
// the same).
inline const testbed::Topology& tree() {
  static const testbed::Topology t = testbed::make_fat_tree({});
  return t;
}

// A MAD as sa-raw-mad sends it (256 bytes, hex), built field by field in wire order.
using testbed::raw::Mad;

// A raw PathRecord SubnAdmGet (sa-raw-mad at node001) naming only a DGID: the multicast group
// `prefix`:`id` (ff12:401b:PKEY::ffff:ffff is a partition's IPoIB broadcast group).
inline Query multicast_get(uint64_t prefix, uint64_t id, uint32_t tid) {
  Mad m;
  m.put(0, 0x01030201, 4);  // base version 1, SA class, class version 2, SubnAdmGet
  m.put(12, tid, 4);
  m.put(16, 0x0035, 2);  // PathRecord
  m.put(48, 1 << 2, 8);  // DGID
  m.gid(56 + 8, prefix, id);
  return {"node001", {m.hex()}, false, true};
}

inline std::string describe(const Query& q) {
  return fmt::format("{} at {}: {}",
                     q.raw   ? "sa-raw-mad"
                     : q.cli ? "rdma-qos path"
                             : "saquery",
                     q.from, fmt::join(q.args, " "));
}

inline void SadDifferential::compare_all(int min_answers, int min_refusals) {
  ASSERT_NE(ours_, nullptr);
  int answered = 0, refused = 0;
  for (size_t i = 0; i < queries_->size(); ++i) {
    const Query& q = (*queries_)[i];
    if (q.args == std::vector<std::string>{"-c"} || !q.deliberate.empty()) continue;
    const Outcome& theirs = (*opensm_)[i];
    const Outcome& ours = (*ours_)[i];
    SCOPED_TRACE(describe(q));
    EXPECT_EQ(ours.exit_code, theirs.exit_code) << "OpenSM:\n"
                                                << theirs.output << "\nours:\n"
                                                << ours.output;
    if (q.raw) {
      // Raw MADs: the same answer bytes and status, or no answer from either.
      EXPECT_FALSE(theirs.json.is_discarded() || theirs.json.is_null()) << theirs.output;
      EXPECT_EQ(ours.json, theirs.json) << "OpenSM:\n"
                                        << theirs.output << "\nours:\n"
                                        << ours.output;
      const bool ok = theirs.json.value("status", std::string()) == "0x0000";
      ++(ok ? answered : refused);
      continue;
    }
    if (q.cli) {
      EXPECT_FALSE(theirs.json.is_discarded() || theirs.json.is_null()) << theirs.output;
      EXPECT_EQ(ours.json, theirs.json) << "OpenSM:\n"
                                        << theirs.output << "\nours:\n"
                                        << ours.output;
      if (theirs.json.contains("paths")) {
        answered += static_cast<int>(theirs.json["paths"].size());
        refused += theirs.json["paths"].empty() ? 1 : 0;
      } else {
        ++refused;
      }
      continue;
    }
    ASSERT_EQ(ours.records.size(), theirs.records.size()) << ours.output;
    if (theirs.records.empty()) ++refused;
    for (size_t r = 0; r < ours.records.size(); ++r) {
      ++answered;
      // Every field saquery prints, from DGID to preference.
      EXPECT_EQ(ours.records[r].fields, theirs.records[r].fields) << "OpenSM:\n"
                                                                  << theirs.output << "\nours:\n"
                                                                  << ours.output;
    }
  }
  // The query set must exercise answers and refusals alike.
  EXPECT_GT(answered, min_answers);
  EXPECT_GT(refused, min_refusals);
  std::printf("%d answers and %d refusals equal to OpenSM's\n", answered, refused);
}

}  // namespace rdmaqos::sad::differential
