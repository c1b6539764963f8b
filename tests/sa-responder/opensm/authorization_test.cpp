// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Authorization: a requester never obtains a path, a P_Key or an SL that the partitions or the
// policy deny it, however it asks. One fabric with limited members, ports that share no
// partition and levels that name P_Keys and SLs; every CA asks for the path between every two
// CAs, plainly and in every way that tries to force one (P_Key, SL, QoS class or Service-ID
// named in the request with their component bits, raw traffic, GIDs instead of LIDs, GetTable,
// MultiPathRecord, an SM_Key), as raw MADs (sa-raw-mad, many per process). OpenSM alone answers
// them first, as the reference; then rdma-qos-sad at the SM's port (this file built for the
// daemon) or OpenSM with the rdma-qos plugin on a fresh fabric (RDMA_QOS_AUTHORIZATION_PLUGIN).
//
// Every answer is checked against the rules of Documentation/opensm-semantics.md
// ("Authorization"), computed here from the partitions and the policy (expected()); OpenSM's
// answers are checked against the same rules, which keeps the rules honest, and ours must equal
// OpenSM's byte for byte wherever OpenSM applies the same rule. Where OpenSM applies none
// (alternate-path MultiPathRecords, PathRecords to a multicast group) ours are held to the rule
// and OpenSM's laxer answers are only recorded.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "authorization_probes.h"
#include "authorization_rules.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::sad::authorization {
namespace {

using testbed::IbFabric;
using testbed::IbFabricOptions;

class SadAuthorization : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    IbFabricOptions o = testbed::fabric_options(tree());
    o.policy = policy();
    o.partitions = partitions();
    fabric_ = new IbFabric(o);
    probes_ = new std::vector<Probe>(make_probes());
    wrong_keys_ = new std::vector<Probe>(make_wrong_key_probes());
    opensm_ = new std::vector<Answer>(ask_all(*probes_, 3000));
    opensm_wrong_keys_ = new std::vector<Answer>(ask_all(*wrong_keys_, 400));
#ifdef RDMA_QOS_AUTHORIZATION_PLUGIN
    start_plugin(o);
#else
    start_sad();
#endif
    if (::testing::Test::HasFatalFailure()) return;
    ours_ = new std::vector<Answer>(ask_all(*probes_, 3000));
    ours_wrong_keys_ = new std::vector<Answer>(ask_all(*wrong_keys_, 400));
  }

#ifdef RDMA_QOS_AUTHORIZATION_PLUGIN
  // OpenSM once more on a fresh fabric (the same topology, policy and partitions) with the
  // plugin, which reads the policy and partitions OpenSM reads.
  static void start_plugin(IbFabricOptions o) {
    delete fabric_;
    fabric_ = nullptr;
    o.opensm_conf +=
        "\nforce_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
        "event_plugin_options control-socket=@DIR@/plugin.sock\n";
    o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
    fabric_ = new IbFabric(o);
    bool answering = false;
    for (int i = 0; i < 200 && !answering; ++i) {
      answering = fabric_->opensm_log().find("rdma-qos plugin: answering") != std::string::npos;
      if (!answering) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(answering) << fabric_->opensm_log();
  }
#else
  // rdma-qos-sad at the SM's port once OpenSM has configured the fabric and stopped.
  static void start_sad() {
    fabric_->stop_sm();
    const std::string policy_path = fabric_->dir() + "/sad-policy.conf";
    const std::string partitions_path = fabric_->dir() + "/sad-partitions.conf";
    std::ofstream(policy_path) << policy();
    std::ofstream(partitions_path) << partitions();
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD, "--foreground", "--policy",
              policy_path,  "--partitions", partitions_path};
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    p.cwd = fabric_->dir();
    p.output_path = fabric_->dir() + "/sad.log";
    auto started = fabric_->start_until_answering(p, {"saquery", "-c"});
    sad_ = started.daemon.release();
    ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
  }
#endif

  static void TearDownTestSuite() {
    delete sad_;
    delete fabric_;
    delete probes_;
    delete wrong_keys_;
    delete opensm_;
    delete ours_;
    delete opensm_wrong_keys_;
    delete ours_wrong_keys_;
    sad_ = nullptr;
    fabric_ = nullptr;
    ours_ = nullptr;
  }

  // Every probe, sent by sa-raw-mad at its requester (one process per requester), answers in
  // the probes' order.
  static std::vector<Answer> ask_all(const std::vector<Probe>& probes, int timeout_ms) {
    std::map<std::string, std::vector<size_t>> by_requester;
    for (size_t i = 0; i < probes.size(); ++i) by_requester[probes[i].requester].push_back(i);
    std::vector<Answer> out(probes.size());
    for (const auto& [requester, indexes] : by_requester) {
      const std::string file = fabric_->dir() + "/probes-" + requester + ".hex";
      {
        std::ofstream f(file);
        for (size_t i : indexes) f << probes[i].hex << "\n";
      }
      const auto budget = std::chrono::milliseconds(
          60000 + static_cast<int64_t>(indexes.size()) * (timeout_ms < 1000 ? timeout_ms : 20));
      testbed::RunResult r = fabric_->run_at(
          requester, {RDMA_QOS_SA_RAW_MAD, "--timeout", std::to_string(timeout_ms), "--from", file},
          budget);
      std::istringstream in(r.output);
      size_t next = 0;
      for (std::string line; std::getline(in, line) && next < indexes.size();) {
        if (line.empty() || line[0] != '{') continue;  // umad2sim's own lines
        out[indexes[next++]] = parse_answer(nlohmann::json::parse(line, nullptr, false));
      }
      EXPECT_EQ(next, indexes.size())
          << "sa-raw-mad at " << requester << " (exit " << r.exit_code << "):\n"
          << r.output.substr(0, 2000);
    }
    return out;
  }

  // The checks on one answer to a kPair / kSmKeyRight probe: no record the rules deny, and the
  // record the rules allow when they allow one. Returns a failure text, empty when it passes.
  static std::string judge_pair(const Probe& p, const Answer& a) {
    if (!a.answered) return "no answer";
    const auto want = expected(p.requester, p.source, p.destination, p.ask);
    if (!want) {
      if (!a.records.empty())
        return fmt::format("a record the rules deny (P_Key {:#06x}, SL {})", a.records[0].pkey,
                           a.records[0].sl);
      return {};
    }
    if (a.records.size() != 1) return fmt::format("{} records, one allowed", a.records.size());
    const Record& r = a.records[0];
    if (r.sguid != port_guid(p.source) || r.dguid != port_guid(p.destination))
      return "a record for another pair";
    if (r.pkey != want->pkey || r.sl != want->sl)
      return fmt::format("P_Key {:#06x} SL {} where the rules give P_Key {:#06x} SL {}", r.pkey,
                         r.sl, want->pkey, want->sl);
    return {};
  }

  // An alternate-path answer: every record's pair allowed to the requester (when
  // `check_requester`), its P_Key and SL those of the rules.
  static std::string judge_apm(const Probe& p, const Answer& a, bool check_requester) {
    if (!a.answered) return "no answer";
    for (const Record& r : a.records) {
      const std::string s = node_of(r.sguid), d = node_of(r.dguid);
      const auto want = expected(p.requester, s, d, {}, check_requester);
      if (!want) return fmt::format("a record {} -> {} the rules deny", s, d);
      if (r.pkey != want->pkey || r.sl != want->sl)
        return fmt::format("{} -> {}: P_Key {:#06x} SL {} where the rules give {:#06x} SL {}", s, d,
                           r.pkey, r.sl, want->pkey, want->sl);
    }
    return {};
  }

  static inline IbFabric* fabric_ = nullptr;
  static inline testbed::Process* sad_ = nullptr;
  static inline std::vector<Probe>* probes_ = nullptr;
  static inline std::vector<Probe>* wrong_keys_ = nullptr;
  static inline std::vector<Answer>* opensm_ = nullptr;
  static inline std::vector<Answer>* ours_ = nullptr;
  static inline std::vector<Answer>* opensm_wrong_keys_ = nullptr;
  static inline std::vector<Answer>* ours_wrong_keys_ = nullptr;
};

// The rules themselves against OpenSM, the reference: its answer to every probe where it
// applies them is the one they give. (A rule written wrong here fails this test, not ours.)
TEST_F(SadAuthorization, OpenSmAnswersAsTheRulesSay) {
  ASSERT_NE(opensm_, nullptr);
  int failures = 0;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    const Answer& a = (*opensm_)[i];
    std::string why;
    if (p.kind == Kind::kPair || p.kind == Kind::kSmKeyRight) why = judge_pair(p, a);
    if (p.kind == Kind::kApm) why = judge_apm(p, a, false);
    if (!why.empty() && ++failures <= 20) ADD_FAILURE() << describe(p) << ": " << why;
  }
  EXPECT_EQ(failures, 0);
}

// Ours: no record the rules deny, in any probe; the record they allow where they allow one.
TEST_F(SadAuthorization, NoRecordTheRulesDenyAndTheOneTheyAllow) {
  ASSERT_NE(ours_, nullptr);
  int failures = 0;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    const Answer& a = (*ours_)[i];
    std::string why;
    switch (p.kind) {
      case Kind::kPair:
      case Kind::kSmKeyRight: why = judge_pair(p, a); break;
      case Kind::kApm: why = judge_apm(p, a, true); break;
      case Kind::kMulticast:
        if (!a.answered) {
          why = "no answer";
        } else if (holds(p.requester, p.group_pkey) ? a.records.size() != 1 : !a.records.empty()) {
          why = fmt::format("{} records", a.records.size());
        }
        break;
      case Kind::kSmKeyWrong: break;
    }
    if (!why.empty() && ++failures <= 20) ADD_FAILURE() << describe(p) << ": " << why;
  }
  EXPECT_EQ(failures, 0);
}

// Where OpenSM applies the same rules (every probe but alternate paths and multicast groups),
// ours is OpenSM's answer byte for byte.
TEST_F(SadAuthorization, EveryAnswerEqualsOpenSmsWhereItHasTheSameRule) {
  ASSERT_NE(ours_, nullptr);
  int failures = 0, compared = 0;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    if (p.kind != Kind::kPair && p.kind != Kind::kSmKeyRight) continue;
    ++compared;
    if ((*ours_)[i].json != (*opensm_)[i].json && ++failures <= 20)
      ADD_FAILURE() << describe(p) << "\nOpenSM: " << (*opensm_)[i].json.dump()
                    << "\nours:   " << (*ours_)[i].json.dump();
  }
  EXPECT_EQ(failures, 0) << "of " << compared;
}

// The probes reach every class of denial, and every class of answer: a suite that denied
// everything, or allowed everything, would pass the checks above.
TEST_F(SadAuthorization, TheProbesReachEveryDenialAndEveryAnswer) {
  ASSERT_NE(ours_, nullptr);
  std::map<std::string, int> seen;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    if (p.kind != Kind::kPair) continue;
    const bool record = !(*ours_)[i].records.empty();
    const bool requester_ok = requester_may(p.requester, p.source, p.destination);
    const bool ends_share = share(p.source, p.destination);
    if (!requester_ok && ends_share) ++seen["requester shares no partition with an end"];
    if (!ends_share) ++seen["ends share no partition"];
    if (p.source != p.destination && !ends_share && holds(p.source, kRed) &&
        holds(p.destination, kRed))
      ++seen["two limited members of one partition"];
    if (requester_ok && p.ask.pkey && !share_this(p.source, p.destination, *p.ask.pkey))
      ++seen["a requested P_Key the ends do not share"];
    if (requester_ok && p.ask.pkey && p.ask.qos_class == 4 &&
        share_this(p.source, p.destination, *p.ask.pkey))
      ++seen["a requested P_Key the level does not list"];
    if (requester_ok && !p.ask.pkey && !p.ask.raw &&
        level_of(p.ask, p.destination).pkey.has_value() &&
        !share_this(p.source, p.destination, *level_of(p.ask, p.destination).pkey))
      ++seen["a level's P_Key the ends do not share"];
    if (requester_ok && ends_share && p.ask.sl && *p.ask.sl != level_of(p.ask, p.destination).sl)
      ++seen["a requested SL other than the level's"];
    if (record && p.requester == p.source && p.requester != p.destination &&
        std::none_of(members().at(p.requester).begin(), members().at(p.requester).end(),
                     [](const Membership& m) { return m.full; }))
      ++seen["records for a requester that is a full member nowhere"];
    if (record && p.ask.pkey) ++seen["records with a requested P_Key"];
    if (record && p.ask.raw) ++seen["records for raw traffic"];
    if (record && p.shape == Shape::kMultiPath) ++seen["MultiPathRecord records"];
    if (record && level_of(p.ask, p.destination).pkey) ++seen["records of a level with a P_Key"];
    if (record) ++seen["records"];
  }
  for (const char* want :
       {"requester shares no partition with an end", "ends share no partition",
        "two limited members of one partition", "a requested P_Key the ends do not share",
        "a requested P_Key the level does not list", "a level's P_Key the ends do not share",
        "a requested SL other than the level's",
        "records for a requester that is a full member nowhere", "records with a requested P_Key",
        "records for raw traffic", "MultiPathRecord records", "records of a level with a P_Key",
        "records"})
    EXPECT_GT(seen[want], 0) << want;
  for (const auto& [what, n] : seen) std::printf("%6d probes: %s\n", n, what.c_str());
}

// SM_Key (the SA header): 0 or the SA's own key is answered alike (PathRecords grant nothing
// more to a trusted requester); any other key gets no answer at all, as from OpenSM.
TEST_F(SadAuthorization, AWrongSmKeyGetsNoAnswerAndTheRightOneNothingMore) {
  ASSERT_NE(ours_, nullptr);
  for (size_t i = 0; i < wrong_keys_->size(); ++i) {
    SCOPED_TRACE(describe((*wrong_keys_)[i]));
    EXPECT_FALSE((*opensm_wrong_keys_)[i].answered) << (*opensm_wrong_keys_)[i].json.dump();
    EXPECT_FALSE((*ours_wrong_keys_)[i].answered) << (*ours_wrong_keys_)[i].json.dump();
  }
  // The SA's key against none: the same answer, probe by probe.
  std::map<std::string, const Answer*> plain;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    if (p.kind == Kind::kPair && p.label == "Get")
      plain[p.requester + p.source + p.destination] = &(*ours_)[i];
  }
  int compared = 0;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    if (p.kind != Kind::kSmKeyRight) continue;
    const Answer* without = plain.at(p.requester + p.source + p.destination);
    EXPECT_EQ((*ours_)[i].records.size(), without->records.size()) << describe(p);
    EXPECT_EQ((*ours_)[i].json.value("data", ""), without->json.value("data", "")) << describe(p);
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(cas().size() * cas().size() * cas().size()));
}

// Where OpenSM checks no requester (alternate paths) or no partition (a multicast group's
// PathRecord), it answers what ours refuses: the deliberate differences of opensm-semantics.md.
// Recorded here so that a change on either side shows.
TEST_F(SadAuthorization, OpenSmIsLaxerForAlternatePathsAndMulticastGroups) {
  ASSERT_NE(ours_, nullptr);
  int opensm_apm_denied = 0, opensm_multicast_foreign = 0, ours_multicast_member = 0;
  for (size_t i = 0; i < probes_->size(); ++i) {
    const Probe& p = (*probes_)[i];
    const Answer& theirs = (*opensm_)[i];
    if (p.kind == Kind::kApm && judge_apm(p, theirs, true).rfind("a record", 0) == 0)
      ++opensm_apm_denied;
    if (p.kind == Kind::kMulticast && !holds(p.requester, p.group_pkey) && !theirs.records.empty())
      ++opensm_multicast_foreign;
    if (p.kind == Kind::kMulticast && holds(p.requester, p.group_pkey)) {
      ours_multicast_member += (*ours_)[i].records.size() == 1 ? 1 : 0;
      EXPECT_EQ((*ours_)[i].json, theirs.json) << describe(p);
    }
  }
  std::printf(
      "OpenSM: %d alternate-path answers with pairs the requester is denied, %d "
      "multicast records for non-members\n",
      opensm_apm_denied, opensm_multicast_foreign);
  EXPECT_GT(opensm_apm_denied, 0);
  EXPECT_GT(opensm_multicast_foreign, 0);
  EXPECT_GT(ours_multicast_member, 0);
}

}  // namespace
}  // namespace rdmaqos::sad::authorization
