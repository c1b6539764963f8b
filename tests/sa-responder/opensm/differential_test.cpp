// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad against OpenSM (see differential_fixture.h): the sample policy over the fat tree
// with mixed link rates, partitions with SLs and limited members, no policy, LMC 1 and 2, and
// reloads.
#include <signal.h>

#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "differential_fixture.h"

namespace rdmaqos::sad::differential {
std::vector<Query> SadDifferential::make_queries() {
  std::vector<Query> out;
  std::vector<std::vector<std::string>> variants = {
      {},
      {"--service_id", "0x1060CBC"},
      {"--qos_class", "7"},
      {"--service_id", "0x210"},
      {"--service_id", "0x210", "--qos_class", "7"},
      {"--service_id", "0x1060CBC", "--sl", "3"},
      {"--service_id", "0x1060CBC", "--sl", "1"},
      {"--sl", "0"},
      {"--pkey", "0xffff"},
      {"--pkey", "0x7fff"},
      {"--pkey", "0x1234"},
      {"--mtu", "<4"},
      {"--mtu", "=5"},
      {"--qos_class", "7", "--mtu", ">2"},
      {"--rate", "<6"},
      {"--rate", ">7"},
      {"--service_id", "0x1060CBC", "--pkt_lifetime", "<8"},
      {"--reversible", "1"},
      {"--tclass", "0x20"},
      {"--flow_label", "0x12345"},
      {"--hop_limit", "3"},
      {"--numb_path", "1"},
      {"--reversible", "0", "--numb_path", "2"},
  };
  // From sm01 and node001 to CAs of every link rate and to a switch (leaf01's port 0).
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"sm01", "node001"},    {"sm01", "node003"},    {"node001", "node002"},
      {"node001", "node005"}, {"node002", "node008"}, {"node004", "node004"},
      {"node001", "leaf01"},
  };
  for (const auto& [from, to] : pairs) {
    for (const auto& v : variants) {
      Query q{from, {"-p", "--slid", lid(from), "--dlid", lid(to)}};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
  }
  // Paths that start at a switch (its port 0) or join two switches, asked by sm01.
  const std::vector<std::pair<std::string, std::string>> switch_pairs = {
      {"leaf01", "node002"}, {"leaf02", "node001"}, {"leaf01", "leaf02"}};
  for (const auto& [src, dst] : switch_pairs) {
    for (const auto& v : variants) {
      Query q{"sm01", {"-p", "--slid", lid(src), "--dlid", lid(dst)}};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
  }
  // Selectors at their boundaries, alone and where a level's limit binds (ISER: 5 Gb/s and
  // packet life 8; GOLD: MTU 1024 and packet life 12; SLOW: MTU 512 and 30 Gb/s). Rate codes
  // are not ordered by speed (2 = 2.5, 3 = 10, 4 = 30, 5 = 5, 6 = 20, 7 = 40, 8 = 60 Gb/s):
  // "<2" has nothing slower, "<5" asks for less than 5 Gb/s. Packet life without a level is
  // subnet_timeout, 18; a loopback's is 0.
  const std::vector<std::vector<std::string>> selector_variants = {
      {"--mtu", "<1"},
      {"--mtu", "<2"},
      {"--mtu", ">4"},
      {"--mtu", ">5"},
      {"--mtu", "=1"},
      {"--mtu", "=4"},
      {"--rate", "<2"},
      {"--rate", "<3"},
      {"--rate", "<5"},
      {"--rate", "=2"},
      {"--rate", "=3"},
      {"--rate", ">2"},
      {"--rate", ">8"},
      {"--rate", "<10"},
      {"--rate", "=7"},
      {"--rate", ">6"},
      {"--pkt_lifetime", "<1"},
      {"--pkt_lifetime", "<2"},
      {"--pkt_lifetime", "<18"},
      {"--pkt_lifetime", "<19"},
      {"--pkt_lifetime", ">17"},
      {"--pkt_lifetime", ">18"},
      {"--pkt_lifetime", "=18"},
      {"--pkt_lifetime", "=19"},
      {"--pkt_lifetime", "=0"},
      {"--pkt_lifetime", ">0"},
      {"--service_id", "0x1060CBC", "--rate", "<5"},
      {"--service_id", "0x1060CBC", "--rate", "=5"},
      {"--service_id", "0x1060CBC", "--rate", ">5"},
      {"--service_id", "0x1060CBC", "--rate", "<3"},
      {"--service_id", "0x1060CBC", "--pkt_lifetime", ">8"},
      {"--service_id", "0x1060CBC", "--pkt_lifetime", "=8"},
      {"--service_id", "0x1060CBC", "--pkt_lifetime", "<9"},
      {"--service_id", "0x1060CBC", "--pkt_lifetime", "=9"},
      {"--qos_class", "7", "--mtu", "=3"},
      {"--qos_class", "7", "--mtu", "<3"},
      {"--qos_class", "7", "--mtu", ">3"},
      {"--qos_class", "7", "--mtu", "=4"},
      {"--qos_class", "7", "--pkt_lifetime", ">11"},
      {"--qos_class", "7", "--pkt_lifetime", "<12"},
      {"--service_id", "0x250", "--mtu", "=2"},
      {"--service_id", "0x250", "--mtu", "<2"},
      {"--service_id", "0x250", "--rate", "=4"},
      {"--service_id", "0x250", "--rate", "<4"},
      {"--service_id", "0x250", "--rate", ">4"},
      {"--service_id", "0x250", "--mtu", ">1", "--rate", "<7"},
  };
  const std::vector<std::pair<std::string, std::string>> selector_pairs = {
      {"sm01", "node001"},    {"node001", "node003"}, {"node002", "node005"},
      {"node004", "node004"}, {"node001", "leaf01"},  {"node004", "node002"},
  };
  for (const auto& [from, to] : selector_pairs) {
    for (const auto& v : selector_variants) {
      Query q{from, {"-p", "--slid", lid(from), "--dlid", lid(to)}};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
  }
  // Selector 3 ("+": largest MTU and rate, smallest packet life available), with and without
  // its value bit (OpenSM ignores a selector without its value), and the boundaries again with
  // Get, whose refusal carries a MAD status.
  const std::vector<std::vector<std::string>> best_variants = {
      {"--mtu", "+"},
      {"--mtu", "+1024"},
      {"--mtu", "+4096"},
      {"--rate", "+"},
      {"--rate", "+7"},
      {"--rate", "+2"},
      {"--pkt-life", "+"},
      {"--pkt-life", "+5"},
      {"--pkt-life", "+31"},
      {"--qos-class", "7", "--mtu", "+4096"},
      {"--service-id", "0x1060CBC", "--rate", "+10"},
      {"--service-id", "0x1060CBC", "--pkt-life", "+20"},
      {"--rate", "<2"},
      {"--mtu", "<256"},
      {"--pkt-life", "<1"},
      {"--pkt-life", ">30"},
  };
  for (const char* to : {"node002", "node003", "node001", "leaf01"}) {
    for (const auto& v : best_variants) {
      for (bool get : {true, false}) {
        Query q{"node001", {"--dlid", lid(to)}, true};
        if (get) q.args.push_back("--get");
        q.args.insert(q.args.end(), v.begin(), v.end());
        out.push_back(q);
      }
    }
  }
  // Our SA client: Get (the MAD status of every refusal), GetTable and GetMulti.
  std::vector<std::vector<std::string>> cli_variants = {
      {},
      {"--service-id", "0x1060CBC"},
      {"--qos-class", "7"},
      {"--service-id", "0x250", "--qos-class", "7"},
      {"--service-id", "0x1060CBC", "--sl", "1"},
      {"--sl", "4"},
      {"--pkey", "0x1234"},
      {"--numb-path", "0"},
  };
  for (const char* to : {"node002", "node003", "node005", "leaf01"}) {
    for (const auto& v : cli_variants) {
      for (bool get : {true, false}) {
        Query q{"node001", {"--dlid", lid(to)}, true};
        if (get) q.args.push_back("--get");
        q.args.insert(q.args.end(), v.begin(), v.end());
        out.push_back(q);
      }
    }
  }
  out.push_back({"node001", {"--get", "--dlid", "999"}, true});
  for (const auto& v : cli_variants) {
    Query q{"node001", {"--mpr", "--dgids", gid("node002") + "," + gid("node004")}, true};
    q.args.insert(q.args.end(), v.begin(), v.end());
    out.push_back(q);
  }
  // DGIDs of another subnet: OpenSM looks for a router towards the prefix and, finding none
  // on ibsim, answers no record (PathRecord) or INVALID_GID (MultiPathRecord). A link-local
  // prefix other than fe80:: still names the port by its GUID.
  auto with_prefix = [](const std::string& prefix, const std::string& node) {
    uint64_t guid = topology_->node(node).port_guid;
    return fmt::format("{}:{:x}:{:x}:{:x}:{:x}", prefix, guid >> 48, (guid >> 32) & 0xFFFF,
                       (guid >> 16) & 0xFFFF, guid & 0xFFFF);
  };
  for (const std::string& dgid :
       {with_prefix("fec0:0:0:0", "node002"), with_prefix("2001:db8:0:1", "node002"),
        with_prefix("fe80:0:0:1", "node002"), with_prefix("febf:0:0:7", "node003"),
        with_prefix("ff02:0:0:0", "node002"), std::string("fec0::dead:beef")}) {
    for (bool get : {true, false}) {
      Query q{"node001", {"--dgid", dgid}, true};
      if (get) q.args.push_back("--get");
      out.push_back(q);
    }
    out.push_back({"node001", {"--mpr", "--dgids", dgid}, true});
    out.push_back({"node001", {"--mpr", "--dgids", gid("node004") + "," + dgid}, true});
    out.push_back({"node001", {"--sgid", dgid, "--dlid", lid("node001")}, true});
  }
  out.push_back({"node001", {"--mpr", "--dgids", "fe80::dead:beef"}, true});
  for (Query& q : apm_queries(apm_shapes(), {{},
                                             {"--service-id", "0x1060CBC"},
                                             {"--qos-class", "7"},
                                             {"--rate", "=6"},
                                             {"--sl", "4"},
                                             {"--mtu", "<4"}})) {
    out.push_back(std::move(q));
  }
  // saquery's own shorthands: LID pairs and GID pairs (NumbPath 127).
  out.push_back({"node001", {"-p", "--src-to-dst", lid("node001") + ":" + lid("node005")}});
  out.push_back({"node002", {"-p", "--src-to-dst", lid("sm01") + ":" + lid("leaf02")}});
  out.push_back({"node001", {"-p", "--sgid-to-dgid", gid("node003") + "-" + gid("node007")}});
  out.push_back({"node001",
                 {"-p", "--sgid-to-dgid", gid("node002") + "-" + gid("node004"), "--service_id",
                  "0x1060CBC"}});
  // Half-named Gets: the first port (in OpenSM's GUID order) that gives a path.
  out.push_back({"node001", {"--get", "--slid", lid("node003")}, true});
  out.push_back({"node001", {"--get", "--sgid", gid("node002")}, true});
  out.push_back({"node001", {"-c"}});  // last: ClassPortInfo
  return out;
}

namespace {

TEST_F(SadDifferential, EveryPathRecordAnswerEqualsOpenSms) {
  compare_all(50, 10);
}

// --rmpp auto: umad2sim (preloaded) cannot do RMPP, so table answers stay one MAD.
TEST_F(SadDifferential, RmppIsOffUnderUmad2sim) {
  ASSERT_NE(ours_, nullptr);
  std::string log = sad_log();
  EXPECT_NE(log.find("RMPP off"), std::string::npos) << log;
}

#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
// The plugin takes over PathRecord and MultiPathRecord only: OpenSM, which answers every other
// attribute, keeps answering ClassPortInfo, masks included.
TEST_F(SadDifferential, ClassPortInfoEqualsOpenSms) {
  const Query& q = queries_->back();
  ASSERT_EQ(q.args, std::vector<std::string>{"-c"});
  const Outcome& theirs = opensm_->back();
  const Outcome& ours = ours_->back();
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  ASSERT_EQ(ours.records.size(), 1u) << ours.output;
  ASSERT_EQ(theirs.records.size(), 1u) << theirs.output;
  EXPECT_EQ(ours.records[0].fields, theirs.records[0].fields) << "OpenSM:\n"
                                                              << theirs.output << "\nours:\n"
                                                              << ours.output;
}
#else
// The capability masks are ours on purpose (what this SA serves: MultiPath; QoS and the
// rate encodings of its PathRecords; Documentation/opensm-semantics.md); the rest is OpenSM's.
TEST_F(SadDifferential, ClassPortInfoIsOpenSmsButForTheCapabilityMasks) {
  const Query& q = queries_->back();
  ASSERT_EQ(q.args, std::vector<std::string>{"-c"});
  const Outcome& theirs = opensm_->back();
  const Outcome& ours = ours_->back();
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  ASSERT_EQ(ours.records.size(), 1u) << ours.output;
  ASSERT_EQ(theirs.records.size(), 1u) << theirs.output;
  EXPECT_EQ(theirs.records[0].number("Capability mask"), 0x2602u) << theirs.output;
  EXPECT_EQ(theirs.records[0].number("Capability mask 2"), 0xB5EAu) << theirs.output;
  EXPECT_EQ(ours.records[0].number("Capability mask"), 0x0400u) << ours.output;
  EXPECT_EQ(ours.records[0].number("Capability mask 2"), 0xA082u) << ours.output;
  auto rest = [](auto fields) {
    fields.erase("Capability mask");
    fields.erase("Capability mask 2");
    return fields;
  };
  EXPECT_EQ(rest(ours.records[0].fields), rest(theirs.records[0].fields))
      << "OpenSM:\n"
      << theirs.output << "\nours:\n"
      << ours.output;
}
#endif

// Partitions with SLs and limited members, levels that carry pkeys, port groups by GUID and by
// partition: the PKey choice (requested, level, common in byte-swapped order), partition SLs,
// reverse-direction matching.
constexpr const char* kPartitions = R"(Default=0x7fff, ipoib : ALL=full;
Compute=0x0010, sl=1 : 0x0002c90300a00011=full, 0x0002c90300a00021=full, 0x0002c90300a00031=limited, 0x0002c90300a00001=full;
Storage=0x0020, sl=2 : 0x0002c90300a00041=full, 0x0002c90300a00051=full, 0x0002c90300a00011=full, 0x0002c90300a00001=full;
)";

constexpr const char* kPkeyPolicy = R"(port-groups
  port-group
    name: StorageNodes
    port-guid: 0x0002c90300a00041, 0x0002c90300a00051
  end-port-group
  port-group
    name: ComputePart
    partition: Compute
  end-port-group
end-port-groups

qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: STOR
    sl: 4
    pkey: 0x20
    rate-limit: 3
  end-qos-level
  qos-level
    name: COMP
    sl: 6
    pkey: 0x10
    mtu-limit: 3
    packet-life: 10
  end-qos-level
end-qos-levels

qos-match-rules
  qos-match-rule
    destination: StorageNodes
    qos-level-name: STOR
  end-qos-match-rule
  qos-match-rule
    source: ComputePart
    qos-class: 3
    qos-level-name: COMP
  end-qos-match-rule
  qos-match-rule
    pkey: 0x10
    qos-level-name: COMP
  end-qos-match-rule
end-qos-match-rules
)";

}  // namespace

std::vector<Query> SadDifferential::partition_queries() {
  std::vector<Query> out;
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"--pkey", "0x10"},
      {"--pkey", "0x8010"},
      {"--pkey", "0x20"},
      {"--pkey", "0x7fff"},
      {"--qos_class", "3"},
      {"--sl", "4"},
      {"--sl", "6"},
      {"--sl", "7"},
      {"--reversible", "1"},
  };
  // LIDs of the fat tree: sm01 1, node00N 1+N.
  const std::vector<std::pair<int, int>> pairs = {{2, 3}, {2, 5}, {3, 5}, {4, 2}, {2, 4},
                                                  {5, 2}, {5, 6}, {4, 3}, {1, 2}};
  for (auto [slid, dlid] : pairs) {
    for (const auto& v : variants) {
      Query q{"sm01", {"-p", "--slid", std::to_string(slid), "--dlid", std::to_string(dlid)}};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
  }
  // Alternate paths where the requested or the level's PKey leaves some of the four pairs
  // without a path (node003 is a limited member of 0x10; 0x20 holds node001, 004, 005).
  for (Query& q : apm_queries({{{"node001", "node003"}, {"node002", "node005"}},
                               {{"node001", "node003"}, {"node004", "node002"}},
                               {{"node003", "node001"}, {"node004", "node005"}},
                               {{"node001", "node002"}, {"node003", "node004"}},
                               {{"node001", "node004"}, {"node005", "node002"}},
                               {{"node003", "node002"}, {"node003", "node001"}}},
                              {{}, {"--pkey", "0x10"}, {"--pkey", "0x20"}, {"--qos-class", "3"}})) {
    out.push_back(std::move(q));
  }
  out.push_back({"node001", {"-c"}});
  return out;
}

namespace {

class SadPartitionDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({kPkeyPolicy, kPartitions, partition_queries}); }
};

TEST_F(SadPartitionDifferential, EveryPathRecordAnswerEqualsOpenSms) {
  compare_all(30, 10);
}

// Without a policy the partition SL of the chosen PKey applies and any usable SL may be asked.
class SadNoPolicyDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({"", kPartitions, partition_queries}); }
};

TEST_F(SadNoPolicyDifferential, EveryPathRecordAnswerEqualsOpenSms) {
  compare_all(30, 5);
}

// LMC 1: every CA port has two LIDs (switch port 0 keeps one). Queries name every SLID/DLID
// combination, one end's whole range (two records: the "fully redundant" pair first, with
// preference 0, then the other with preference 2), both ranges under NumbPath, Get, and
// MultiPathRecord budgets. umad2sim passes at most two records per answer, so no query here
// asks for more (all four combinations of two ranges would need RMPP).
class SadLmcDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({kPolicy, "", lmc_queries, 1}); }

  static std::vector<Query> lmc_queries() {
    std::vector<Query> out;
    const std::vector<std::vector<std::string>> variants = {
        {},
        {"--service_id", "0x1060CBC"},
        {"--qos_class", "7"},
        {"--rate", "<6"},
        {"--reversible", "1"},
    };
    struct Pair {
      std::string from, src, dst;
      int src_lids, dst_lids;
    };
    const std::vector<Pair> pairs = {
        {"node001", "node001", "node002", 2, 2}, {"sm01", "sm01", "node003", 2, 2},
        {"node002", "node002", "node002", 2, 2}, {"sm01", "node004", "node005", 2, 2},
        {"node001", "node001", "leaf01", 2, 1},  {"sm01", "leaf02", "node003", 1, 2},
    };
    for (const Pair& p : pairs) {
      for (int so = 0; so < p.src_lids; ++so) {
        for (int dof = 0; dof < p.dst_lids; ++dof) {
          for (const auto& v : variants) {
            Query q{p.from, {"-p", "--slid", lid(p.src, so), "--dlid", lid(p.dst, dof)}};
            q.args.insert(q.args.end(), v.begin(), v.end());
            out.push_back(q);
          }
        }
      }
    }
    // A LID past a switch's single LID, and one past a CA's range, name no port.
    out.push_back({"sm01", {"-p", "--slid", lid("node001"), "--dlid", lid("leaf01", 1)}});
    const std::vector<std::vector<std::string>> cli_variants = {
        {}, {"--service-id", "0x1060CBC"}, {"--rate", "<6"}, {"--sl", "4"}};
    for (const char* to : {"node002", "node003", "leaf01"}) {
      for (const auto& v : cli_variants) {
        std::vector<std::vector<std::string>> shapes = {
            // The source's range to one DLID (base or second), the source's second LID to the
            // destination's range, both ranges under NumbPath 2 / 1 / 0 and with Get.
            {"--sgid", gid("node001"), "--dlid", lid(to)},
            {"--sgid", gid("node001"), "--dlid", lid(to, 1)},
            {"--slid", lid("node001", 1), "--dgid", gid(to)},
            {"--sgid", gid("node001"), "--dgid", gid(to), "--numb-path", "2"},
            {"--sgid", gid("node001"), "--dgid", gid(to), "--numb-path", "1"},
            {"--sgid", gid("node001"), "--dgid", gid(to), "--numb-path", "0"},
            {"--get", "--sgid", gid("node001"), "--dgid", gid(to)},
            {"--get", "--dlid", lid(to, 1)},
            {"--get", "--slid", lid("node001", 1), "--dlid", lid(to, 1)},
            {"--mpr", "--dgids", gid(to), "--numb-path", "2"},
            {"--mpr", "--dgids", gid(to), "--numb-path", "1"},
            {"--mpr", "--dgids", gid(to) + "," + gid("node004"), "--numb-path", "2"},
        };
        for (auto& shape : shapes) {
          Query q{"node001", shape, true};
          q.args.insert(q.args.end(), v.begin(), v.end());
          out.push_back(q);
        }
      }
    }
    out.push_back({"node001", {"--get", "--dlid", lid("leaf01", 1)}, true});
    out.push_back({"node001", {"--get", "--slid", lid("node003", 1)}, true});
    // Alternate paths: the hashed LID offsets pick which of each port's two LIDs is used.
    std::vector<Shape> shapes = apm_shapes();
    shapes.push_back({{"node004", "node006"}, {"node007", "node008"}});
    shapes.push_back({{"node002", "node003"}, {"node006", "sm01"}});
    for (Query& q : apm_queries(shapes, {{}, {"--service-id", "0x1060CBC"}, {"--rate", "=6"}})) {
      out.push_back(std::move(q));
    }
    out.push_back({"node001", {"-c"}});
    return out;
  }
};

TEST_F(SadLmcDifferential, EveryPathRecordAnswerEqualsOpenSms) {
  compare_all(100, 5);
}

// The comparison means something only if OpenSM did run with LMC 1: it answered paths from and
// to second LIDs, and with Preference 2 where the offsets differ.
TEST_F(SadLmcDifferential, OpenSmAnsweredSecondLidsAndLowerPreferences) {
  ASSERT_NE(opensm_, nullptr);
  int second_lids = 0, preference_2 = 0;
  for (const Outcome& o : *opensm_) {
    for (const testbed::SaRecord& r : o.records) {
      auto slid = r.number("slid"), dlid = r.number("dlid");
      if ((slid && *slid % 2 == 1) || (dlid && *dlid % 2 == 1)) ++second_lids;
    }
    if (o.json.is_object() && o.json.contains("paths")) {
      for (const auto& p : o.json["paths"]) {
        if (p.value("preference", 0) == 2) ++preference_2;
      }
    }
  }
  EXPECT_GT(second_lids, 40);
  EXPECT_GT(preference_2, 5);
}

// LMC 2: alternate-path requests between random pairs of ports (CAs, switches, the SM), where
// the hashed offset picks one of four LIDs per CA: OpenSM hashes the LIDs unconverted from
// network byte order, and scores diagonals by link count, loopbacks included.
class SadLmc2AlternatePathDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({kPolicy, "", queries, 2}); }

  static std::vector<Query> queries() {
    const std::vector<std::string> ports = {"sm01",    "node001", "node002", "node003",
                                            "node004", "node005", "node006", "node007",
                                            "node008", "leaf01",  "spine01"};
    std::mt19937 random(20261122);  // fixed: the same shapes every run
    std::uniform_int_distribution<size_t> pick(0, ports.size() - 1);
    auto two = [&] {
      size_t a = pick(random), b = pick(random);
      while (b == a) b = pick(random);
      return std::vector<std::string>{ports[a], ports[b]};
    };
    std::vector<Shape> shapes;
    for (int i = 0; i < 40; ++i) {
      std::vector<std::string> s = two();
      shapes.push_back({s, two()});
    }
    return apm_queries(shapes, {{}, {"--rate", "=6"}});
  }
};

TEST_F(SadLmc2AlternatePathDifferential, EveryAnswerEqualsOpenSms) {
  compare_all(80, -1);
}

// Reloads run last: they change the policy in force.
class SadReload : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({kPolicy, "", reload_queries}); }
  // The two answers the reload tests ask for, compared once more.
  static std::vector<Query> reload_queries() {
    return {
        {"node001",
         {"-p", "--slid", lid("node001"), "--dlid", lid("node002"), "--service_id", "0x1060CBC"}},
        {"node001",
         {"-p", "--slid", lid("node001"), "--dlid", lid("node005"), "--service_id", "0x1060CBC"}}};
  }
  static std::optional<uint64_t> iser_sl() {
    Outcome o = run(
        {"node001",
         {"-p", "--slid", lid("node001"), "--dlid", lid("node002"), "--service_id", "0x1060CBC"}});
    if (o.records.empty()) return std::nullopt;
    return o.records[0].number("sl");
  }
  // Writes `policy`, sends SIGHUP and waits until the daemon logged the outcome.
  static std::string reload(const std::string& policy) {
    std::ofstream(our_policy_path()) << policy;
    size_t before = count_reloads();
    signal_ours(SIGHUP);
    for (int i = 0; i < 100 && count_reloads() == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return sad_log();
  }
  static size_t count_reloads(std::vector<const char*> markers = {"policy reloaded",
                                                                  "policy reload failed"}) {
    std::string log = sad_log();
    size_t n = 0;
    for (const char* marker : markers) {
      for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
        ++n;
      }
    }
    return n;
  }
};

TEST_F(SadReload, BadPolicyKeepsTheOldOneAndGoodPolicyReplacesIt) {
  ASSERT_NE(ours_, nullptr);
  ASSERT_EQ(iser_sl(), 3u);
  std::string log = reload("qos-levels\n  qos-level\n    name: BROKEN\n    sl: 99\n");
  EXPECT_NE(log.find("policy reload failed"), std::string::npos) << log;
  EXPECT_EQ(iser_sl(), 3u);
  std::string good = kPolicy;
  good.replace(good.find("sl: 3"), 5, "sl: 6");
  log = reload(good);
  EXPECT_NE(log.find("policy reloaded"), std::string::npos) << log;
  EXPECT_EQ(iser_sl(), 6u);
}

TEST_F(SadReload, UsrOneRediscoversAndKeepsAnswering) {
  ASSERT_NE(ours_, nullptr);
  const std::vector<const char*> markers = {"fabric re-discovered", "re-discovery failed"};
  const Query q{
      "node001",
      {"-p", "--slid", lid("node001"), "--dlid", lid("node005"), "--service_id", "0x1060CBC"}};
  Outcome answer_before = run(q);
  ASSERT_EQ(answer_before.records.size(), 1u) << answer_before.output;
  size_t before = count_reloads(markers);
  signal_ours(SIGUSR1);
  for (int i = 0; i < 400 && count_reloads(markers) == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string log = sad_log();
  EXPECT_NE(log.find("fabric re-discovered"), std::string::npos) << log;
  // The same fabric, re-read: the same answer.
  Outcome answer_after = run(q);
  ASSERT_EQ(answer_after.records.size(), 1u) << answer_after.output << log;
  EXPECT_EQ(answer_after.records[0].fields, answer_before.records[0].fields);
}

}  // namespace
}  // namespace rdmaqos::sad::differential
