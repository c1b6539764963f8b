// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// path-bits on ibsim, with LMC 1 and 2 on a fat tree whose second spine is slower, so that a
// port's LIDs, which OpenSM routes over different spines, show different path rates. OpenSM
// ignores path-bits, but answers each (SLID, DLID) combination asked by LID over that DLID's
// routes: those answers are the reference. Our answer to a query that leaves the LIDs to the SA
// (GIDs only) must be exactly OpenSM's records for the combinations whose DLID carries the
// level's bits, in OpenSM's order and with its preferences; every level without path-bits, and
// every query naming its LIDs, must get OpenSM's answer.
//
// Answers stay at two records at most (a Get, or NumbPath 2): under ibsim a client reads a
// longer GetTable answer as two records and a garbled third (OpenSM's four LMC 1 records, or
// three asked with NumbPath 3, alike), which would compare nothing.
#include <fmt/ranges.h>

#include "differential_fixture.h"

namespace rdmaqos::sad::differential {
namespace {

// Service IDs 0x10.. pin levels to `bits`; 0x20 is a level without path-bits.
struct Pin {
  const char* service;
  std::vector<int> bits;  // the DLID offsets the level's path-bits allow at the destination
  const char* text;       // the path-bits line
};

const std::vector<Pin>& pins(int lmc) {
  static const std::vector<Pin> lmc1 = {{"0x10", {1}, "1"}, {"0x11", {0}, "0"}};
  // "2,9": 9 is past any LID range of an LMC 2 subnet (a load-time warning), 2 stays.
  static const std::vector<Pin> lmc2 = {
      {"0x10", {1}, "1"}, {"0x11", {2, 3}, "2-3"}, {"0x12", {2}, "2,9"}, {"0x13", {0, 3}, "0,3"}};
  return lmc == 1 ? lmc1 : lmc2;
}

std::string pinned_policy(int lmc) {
  std::string levels, rules;
  int i = 0;
  for (const Pin& p : pins(lmc)) {
    levels += fmt::format(
        "  qos-level\n    name: Pinned{}\n    sl: {}\n    path-bits: {}\n  end-qos-level\n", i,
        i + 1, p.text);
    rules += fmt::format(
        "  qos-match-rule\n    service-id: {}\n    qos-level-name: Pinned{}\n"
        "  end-qos-match-rule\n",
        p.service, i);
    ++i;
  }
  return "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\n" + levels +
         "  qos-level\n    name: Plain\n    sl: 7\n    mtu-limit: 4\n  end-qos-level\n"
         "end-qos-levels\nqos-match-rules\n" +
         rules +
         "  qos-match-rule\n    service-id: 0x20\n    qos-level-name: Plain\n"
         "  end-qos-match-rule\nend-qos-match-rules\n";
}

testbed::FatTreeSpec two_speed_tree() {
  testbed::FatTreeSpec spec;
  spec.spine_uplinks = {{testbed::Width::k4x, testbed::Speed::kQdr},
                        {testbed::Width::k4x, testbed::Speed::kSdr}};
  return spec;
}

// Port pairs across the leaves (routes over a spine), both ways, and within one leaf.
const std::vector<std::pair<std::string, std::string>> kPairs = {
    {"node001", "node006"}, {"node006", "node001"}, {"node002", "node003"}};

class PathBitsOnIbsim : public SadDifferential {
 protected:
  static inline int lmc_ = 0;

  static int lids() { return 1 << lmc_; }

  // `rdma-qos path --json` naming both ends by GID only, so that the SA picks the LIDs.
  static Query by_gids(const std::string& src, const std::string& dst, const char* service,
                       std::vector<std::string> extra) {
    Query q{"node001", {"--sgid", gid(src), "--dgid", gid(dst)}, true};
    if (service != nullptr) q.args.insert(q.args.end(), {"--service-id", service});
    q.args.insert(q.args.end(), extra.begin(), extra.end());
    return q;
  }
  // The reference: one (SLID, DLID) combination asked by LID (a Get).
  static Query by_lids(const std::string& src, int so, const std::string& dst, int dof,
                       const char* service) {
    return {"node001",
            {"--get", "--slid", lid(src, so), "--dlid", lid(dst, dof), "--service-id", service},
            true};
  }

  static std::vector<Query> queries() {
    std::vector<Query> out;
    for (const auto& [src, dst] : kPairs) {
      // Without path-bits (DEFAULT and the Plain level): OpenSM's answers.
      for (const char* service : {static_cast<const char*>(nullptr), "0x20"}) {
        out.push_back(by_gids(src, dst, service, {"--get"}));
        out.push_back(by_gids(src, dst, service, {"--numb-path", "2"}));
      }
      for (const Pin& p : pins(lmc_)) {
        for (int so = 0; so < lids(); ++so)
          for (int dof = 0; dof < lids(); ++dof)
            out.push_back(by_lids(src, so, dst, dof, p.service));
        for (auto extra :
             {std::vector<std::string>{"--get"}, std::vector<std::string>{"--numb-path", "2"}}) {
          Query q = by_gids(src, dst, p.service, extra);
          q.deliberate = "path-bits";
          out.push_back(q);
        }
        Query mpr{"node001",
                  {"--mpr", "--sgids", gid(src), "--dgids", gid(dst), "--service-id", p.service,
                   "--numb-path", "2"},
                  true};
        mpr.deliberate = "path-bits";
        out.push_back(mpr);
      }
    }
    return out;
  }

  static void start_with_lmc(int lmc) {
    lmc_ = lmc;
    start({pinned_policy(lmc), "", queries, lmc, "", two_speed_tree()});
  }

  static std::string arg(const Query& q, const std::string& name) {
    for (size_t i = 0; i + 1 < q.args.size(); ++i)
      if (q.args[i] == name) return q.args[i + 1];
    return {};
  }
  static bool has(const Query& q, const std::string& name) {
    return std::find(q.args.begin(), q.args.end(), name) != q.args.end();
  }

  static const Pin* pin_of(const Query& q) {
    for (const Pin& p : pins(lmc_))
      if (arg(q, "--service-id") == p.service) return &p;
    return nullptr;
  }
  static bool allowed(const Pin& p, int offset) {
    return std::find(p.bits.begin(), p.bits.end(), offset) != p.bits.end();
  }

  // OpenSM's record for one combination, asked by LID (nullopt: it gave none).
  static std::optional<nlohmann::json> reference(const std::string& src, int so,
                                                 const std::string& dst, int dof,
                                                 const char* service) {
    const Query want = by_lids(src, so, dst, dof, service);
    for (size_t i = 0; i < queries_->size(); ++i) {
      if ((*queries_)[i].args != want.args) continue;
      const auto& paths = (*opensm_)[i].json.value("paths", nlohmann::json::array());
      if (paths.size() == 1) return paths[0];
      return std::nullopt;
    }
    ADD_FAILURE() << "no reference query " << fmt::format("{}", want.args);
    return std::nullopt;
  }

  // What a GID-only query for a pinned level must get: the combinations in OpenSM's order
  // (equal offsets first with preference 0, then source-major with preference 2), those whose
  // DLID offset the level allows and that OpenSM answered, at most `limit`.
  static nlohmann::json expected(const std::string& src, const std::string& dst, const Pin& p,
                                 size_t limit) {
    nlohmann::json out = nlohmann::json::array();
    auto take = [&](int so, int dof, int preference) {
      if (out.size() >= limit || !allowed(p, dof)) return;
      auto r = reference(src, so, dst, dof, p.service);
      if (!r) return;
      (*r)["preference"] = preference;
      out.push_back(*r);
    };
    for (int o = 0; o < lids(); ++o) take(o, o, 0);
    for (int so = 0; so < lids(); ++so)
      for (int dof = 0; dof < lids(); ++dof)
        if (so != dof) take(so, dof, 2);
    return out;
  }

  // Every path-bits query against expected(); returns how many records that was.
  static int compare_pinned() {
    int records = 0;
    for (size_t i = 0; i < queries_->size(); ++i) {
      const Query& q = (*queries_)[i];
      if (q.deliberate != "path-bits") continue;
      SCOPED_TRACE(describe(q));
      const Pin* pin = pin_of(q);
      EXPECT_NE(pin, nullptr);
      if (pin == nullptr) continue;
      std::string src, dst;
      for (const auto& [s, d] : kPairs) {
        if (arg(q, has(q, "--mpr") ? "--sgids" : "--sgid") == gid(s) &&
            arg(q, has(q, "--mpr") ? "--dgids" : "--dgid") == gid(d)) {
          src = s;
          dst = d;
        }
      }
      EXPECT_FALSE(src.empty());
      if (src.empty()) continue;
      nlohmann::json want = expected(src, dst, *pin, has(q, "--get") ? 1 : 2);
      EXPECT_FALSE(want.empty());
      const Outcome& ours = (*ours_)[i];
      EXPECT_EQ(ours.json.value("paths", nlohmann::json::array()), want) << ours.output;
      records += static_cast<int>(want.size());
    }
    return records;
  }

  // The test means something only if the routing does give a port's LIDs different routes:
  // OpenSM's own records from node001 to node006 (both 40 Gb/s) differ in rate between the
  // DLIDs that cross the 40 Gb/s spine and those that cross the 10 Gb/s one.
  static void expect_lids_take_different_routes() {
    std::set<int> rates;
    for (int dof = 0; dof < lids(); ++dof) {
      auto r = reference("node001", 0, "node006", dof, pins(lmc_)[0].service);
      if (r) rates.insert(r->value("rate", 0));
    }
    EXPECT_EQ(rates.size(), 2u) << fmt::format("{}", rates);
  }
};

class SadPathBitsLmc1 : public PathBitsOnIbsim {
 protected:
  static void SetUpTestSuite() { start_with_lmc(1); }
};

class SadPathBitsLmc2 : public PathBitsOnIbsim {
 protected:
  static void SetUpTestSuite() { start_with_lmc(2); }
};

TEST_F(SadPathBitsLmc1, TheRoutingGivesAPortsLidsDifferentRoutes) {
  expect_lids_take_different_routes();
}

TEST_F(SadPathBitsLmc1, LevelsWithPathBitsAnswerOpenSmsRecordsForThoseDlids) {
  EXPECT_GT(compare_pinned(), 15);
}

TEST_F(SadPathBitsLmc1, LevelsWithoutPathBitsAnswerAsOpenSm) {
  compare_all(30, -1);
}

TEST_F(SadPathBitsLmc2, TheRoutingGivesAPortsLidsDifferentRoutes) {
  expect_lids_take_different_routes();
}

TEST_F(SadPathBitsLmc2, LevelsWithPathBitsAnswerOpenSmsRecordsForThoseDlids) {
  EXPECT_GT(compare_pinned(), 40);
}

TEST_F(SadPathBitsLmc2, LevelsWithoutPathBitsAnswerAsOpenSm) {
  compare_all(150, -1);
}

// "path-bits: 2,9" with LMC 2: 9 names no LID; the load says so at the level's line.
TEST_F(SadPathBitsLmc2, ValuesBeyondTheLmcWarnAtLoad) {
  const std::string log = sad_log();
  EXPECT_NE(log.find("path-bits 9 ignored"), std::string::npos) << log;
  EXPECT_NE(log.find("-policy.conf:"), std::string::npos) << log;
}

}  // namespace
}  // namespace rdmaqos::sad::differential
