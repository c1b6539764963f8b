// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Differential test: for several policies and PathRecord queries, the SL our compiled matcher
// picks equals the SL OpenSM answers on ibsim (saquery -p), and both equal the SL written in
// the case. The fabric our matcher sees is read from the same net file ibsim runs. And a policy
// using rdma-qos's tclass extension is one OpenSM rejects, where our compatibility check warns.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/opensm_compat.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace rdmaqos::policy {
namespace {

namespace tb = rdmaqos::testbed;

// Port GUIDs make_fat_tree assigns: sm01 0x...a00001, nodeNNN 0x...a00001 + 0x10 * NNN.
constexpr uint64_t kNode001 = 0x0002c90300a00011;
constexpr uint64_t kNode003 = 0x0002c90300a00031;
constexpr uint64_t kNode004 = 0x0002c90300a00041;
constexpr uint64_t kNode005 = 0x0002c90300a00051;
constexpr uint64_t kNode006 = 0x0002c90300a00061;
constexpr uint64_t kNode007 = 0x0002c90300a00071;
constexpr uint64_t kNode008 = 0x0002c90300a00081;

struct Query {
  std::string src, dst;  // topology node ids
  std::optional<uint64_t> service_id;
  std::optional<uint16_t> qos_class;
  std::optional<uint16_t> pkey;
  int sl;  // the SL both must answer
};

struct Case {
  std::string policy;
  std::string partitions;
  std::vector<Query> queries;
};

const std::string kPartitions = fmt::format(
    "Default=0x7fff, ipoib : ALL=full ;\n"
    "Compute=0x10, ipoib : 0x{:x}=full, 0x{:x}=full ;\n"
    "Storage=0x20 : 0x{:x}=full, 0x{:x}=full, 0x{:x}=full ;\n",
    kNode007, kNode008, kNode001, kNode003, kNode004);

std::string levels(int from, int to) {
  std::string s;
  for (int sl = from; sl <= to; ++sl)
    s += fmt::format("  qos-level\n    name: L{}\n    sl: {}\n  end-qos-level\n", sl, sl);
  return s;
}

// Every full-policy selector and criterion.
Case full_policy_case() {
  Case c;
  c.partitions = kPartitions;
  c.policy = fmt::format(R"(# full policy: groups of every kind, ranges, masks, octal
port-groups
  port-group
    name: Node1
    port-guid: 0x{:x}
  end-port-group
  port-group
    name: Storage Targets   # blanks dropped: StorageTargets
    use: the two storage nodes, by name
    port-name: "node003 HCA-1/P1", "node004 HCA-1/P1"
  end-port-group
  port-group
    name: Leaves
    node-type: SWITCH
  end-port-group
  port-group
    name: FromSM
    node-type: self
  end-port-group
  port-group
    name: Range56
    port-guid: 0x{:x}-0x{:x}
  end-port-group
  port-group
    name: ByPkey
    pkey: 0x8020
  end-port-group
  port-group
    name: ByPartition
    partition: Compute
  end-port-group
end-port-groups

qos-setup
  sl2vl-tables
    sl2vl-scope
      group: Leaves
      sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,0
    end-sl2vl-scope
  end-sl2vl-tables
end-qos-setup

qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
{}  qos-level
    name: Octal
    sl: 012
  end-qos-level
end-qos-levels

qos-match-rules
  qos-match-rule
    source: Node1
    destination: storagetargets
    qos-level-name: L1
  end-qos-match-rule
  qos-match-rule
    service-id: 0x100-0x1FF
    service-id: 0x300
    qos-level-name: L2
  end-qos-match-rule
  qos-match-rule
    qos-class: 300-200
    qos-level-name: l3
  end-qos-match-rule
  qos-match-rule
    qos-class: 7
    service-id: 0x500
    qos-level-name: L4
  end-qos-match-rule
  qos-match-rule
    destination: Leaves
    qos-level-name: L5
  end-qos-match-rule
  qos-match-rule
    source: FromSM
    qos-level-name: L6
  end-qos-match-rule
  qos-match-rule
    pkey: 0x8010
    qos-level-name: L7
  end-qos-match-rule
  qos-match-rule
    source: Range56
    qos-level-name: Octal
  end-qos-match-rule
  qos-match-rule
    destination: ByPkey
    qos-level-name: L9
  end-qos-match-rule
  qos-match-rule
    destination: ByPartition
    qos-level-name: L11
  end-qos-match-rule
end-qos-match-rules
)",
                         kNode001, kNode006, kNode005, levels(1, 11));
  c.queries = {
      {"node001", "node003", {}, {}, {}, 1},      // source and destination groups
      {"node003", "node001", {}, {}, {}, 9},      // the reverse is another query
      {"node002", "node005", 0x150, {}, {}, 2},   // service-id range
      {"node002", "node005", 0x300, {}, {}, 2},   // second service-id line
      {"node002", "node005", 0x200, {}, {}, 0},   // no rule: DEFAULT
      {"node002", "node006", {}, 250, {}, 3},     // reversed qos-class range
      {"node006", "node001", {}, 300, {}, 3},     // its upper end
      {"node002", "node006", 0x500, 7, {}, 4},    // class and service-id together
      {"node002", "node006", {}, 7, {}, 0},       // class alone does not match r4
      {"node002", "leaf01", {}, {}, {}, 5},       // node-type SWITCH
      {"sm01", "node002", {}, {}, {}, 6},         // node-type SELF
      {"node005", "node002", {}, {}, {}, 10},     // reversed GUID range, octal SL
      {"node007", "node008", {}, {}, 0x10, 7},    // rule pkey 0x8010 masked
      {"node007", "node008", {}, {}, 0x8010, 7},  // membership bit ignored
      {"node002", "node008", {}, {}, {}, 11},     // partition group
      {"node002", "node004", {}, {}, {}, 9},      // pkey group
  };
  return c;
}

// The simplified syntax, combined with one full rule that wins over it.
Case ulps_case() {
  Case c;
  c.partitions = kPartitions;
  c.policy = fmt::format(R"(qos-levels
  qos-level
    name: Hi
    sl: 12
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x10005
    qos-level-name: Hi
  end-qos-match-rule
end-qos-match-rules
qos-ulps
  default                        : 1
  sdp, port-num 5-6              : 2
  SDP                            : 3
  rds                            : 4
  iser, port-num 900             : 5
  iser                           : 6
  srp, target-port-guid 0x{:x}   : 7
  ipoib, pkey 0x10               : 8
  any, service-id 0x6234         : 9
  any, pkey 0x20                 : 10
  any, source-port-guid 0x{:x}   : 11
  any, target-port-guid 0x{:x}   : 13
  ipoib                          : 14
  any, source-target-port-guid 0x{:x} : 15
end-qos-ulps
)",
                         kNode004, kNode005, kNode006, kNode007);
  c.queries = {
      {"node001", "node002", 0x10005, {}, {}, 12},   // full rules first
      {"node001", "node002", 0x10006, {}, {}, 2},    // sdp port-num
      {"node001", "node002", 0x1ABCD, {}, {}, 3},    // sdp
      {"node001", "node002", 0x10648CA, {}, {}, 4},  // rds
      {"node001", "node002", 0x1060384, {}, {}, 5},  // iser port-num 900
      {"node001", "node002", 0x1060CBC, {}, {}, 6},  // iser
      {"node001", "node004", {}, {}, {}, 7},         // srp target-port-guid
      {"node007", "node008", {}, {}, 0x10, 8},       // ipoib pkey
      {"node001", "node002", 0x6234, {}, {}, 9},     // any service-id
      {"node001", "node003", {}, {}, 0x20, 10},      // any pkey
      {"node005", "node002", {}, {}, {}, 11},        // any source-port-guid
      {"node002", "node006", {}, {}, {}, 13},        // any target-port-guid
      {"node001", "node002", {}, {}, 0x7fff, 14},    // ipoib default partition
      {"node007", "node007", {}, {}, {}, 15},        // source-target: both ends
      {"node007", "node008", {}, {}, {}, 1},         // ... not just one; ulps default
  };
  return c;
}

// A rule without criteria shadows later rules and DEFAULT; names are case-insensitive.
Case catch_all_case() {
  Case c;
  c.policy = fmt::format(R"(port-groups
  port-group
    name: Mixed Case
    port-guid: 0x{:x}
  end-port-group
end-port-groups
qos-levels
  qos-level
    name: default
    sl: 0
  end-qos-level
{}end-qos-levels
qos-match-rules
  qos-match-rule
    source: mixedcase
    qos-level-name: l2
  end-qos-match-rule
  qos-match-rule
    use: catch-all
    qos-level-name: L13
  end-qos-match-rule
  qos-match-rule
    qos-class: 1
    qos-level-name: L3
  end-qos-match-rule
end-qos-match-rules
)",
                         kNode003, levels(2, 13));
  c.queries = {
      {"node003", "node001", {}, {}, {}, 2},
      {"node001", "node002", {}, 1, {}, 13},
      {"node001", "node002", {}, {}, {}, 13},
  };
  return c;
}

// Switch and lower-case port names, class with pkey, partition groups on both ends, RDS ports.
Case names_and_combinations_case() {
  Case c;
  c.partitions = kPartitions;
  c.policy = fmt::format(R"(port-groups
  port-group
    name: LeafByName
    port-name: "leaf02 switch/P3"
  end-port-group
  port-group
    name: LowerP
    port-name: "node002 HCA-1/p1"
  end-port-group
  port-group
    name: StorageMembers
    partition: Storage
  end-port-group
end-port-groups
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
{}end-qos-levels
qos-match-rules
  qos-match-rule
    destination: LeafByName
    qos-level-name: L1
  end-qos-match-rule
  qos-match-rule
    source: LowerP
    qos-class: 10-20
    pkey: 0x7fff
    qos-level-name: L2
  end-qos-match-rule
  qos-match-rule
    source: StorageMembers
    destination: StorageMembers
    qos-level-name: L3
  end-qos-match-rule
end-qos-match-rules
qos-ulps
  rds, port-num 3260      : 4
  any, service-id 0x1-0x5 : 5
end-qos-ulps
)",
                         levels(1, 3));
  c.queries = {
      {"node001", "leaf02", {}, {}, {}, 1},  // an external port names the switch
      {"node001", "leaf01", {}, {}, {}, 0},
      {"node002", "node001", {}, 15, 0x7fff, 2},  // class and pkey together
      {"node002", "node001", {}, 15, {}, 0},      // pkey missing from the mask
      {"node002", "node001", {}, 30, 0x7fff, 0},
      {"node001", "node003", {}, {}, {}, 3},         // partition group at both ends
      {"node001", "node002", 0x1060CBC, {}, {}, 4},  // rds port 3260 is iSER's ID
      {"node001", "node002", 0x3, {}, {}, 5},
  };
  return c;
}

void expect_same_sl_as_opensm(const Case& c) {
  tb::IbFabricOptions options = tb::fabric_options(tb::make_fat_tree({}));
  options.policy = c.policy;
  options.partitions = c.partitions;
  const tb::Topology topo = options.topology;

  FabricResult fr = parse_net_file(topo.netfile);
  ASSERT_TRUE(fr.diagnostics.empty());
  Fabric fabric = fr.fabric;
  ASSERT_EQ(fabric.sm_port_guid, topo.sm_node().port_guid);
  if (!c.partitions.empty()) {
    PartitionsResult pr = parse_partitions(c.partitions, fabric);
    ASSERT_TRUE(pr.diagnostics.empty());
    fabric.partitions = pr.partitions;
  }
  CompileResult ours = load_policy(c.policy, &fabric);
  for (const auto& d : ours.diagnostics)
    EXPECT_NE(d.severity, Severity::kError) << format_diagnostic(d, "policy");
  ASSERT_TRUE(ours.policy);

  tb::IbFabric ib(options);
  for (const Query& q : c.queries) {
    const tb::TopoNode& src = topo.node(q.src);
    const tb::TopoNode& dst = topo.node(q.dst);
    std::string what = fmt::format("{} -> {}", q.src, q.dst);
    std::vector<std::string> argv = {
        "saquery", "-p", "--slid", std::to_string(src.lid), "--dlid", std::to_string(dst.lid)};
    PathQuery pq;
    pq.source_guid = src.port_guid;
    pq.destination_guid = dst.port_guid;
    pq.source_type = src.kind == tb::NodeKind::kSwitch ? NodeType::kSwitch : NodeType::kCa;
    pq.destination_type = dst.kind == tb::NodeKind::kSwitch ? NodeType::kSwitch : NodeType::kCa;
    if (q.service_id) {
      argv.insert(argv.end(), {"--service_id", fmt::format("0x{:x}", *q.service_id)});
      pq.component_mask |= kCompServiceIdMsb | kCompServiceIdLsb;
      pq.service_id = *q.service_id;
      what += fmt::format(" sid 0x{:x}", *q.service_id);
    }
    if (q.qos_class) {
      argv.insert(argv.end(), {"--qos_class", std::to_string(*q.qos_class)});
      pq.component_mask |= kCompQosClass;
      pq.qos_class = *q.qos_class;
      what += fmt::format(" class {}", *q.qos_class);
    }
    if (q.pkey) {
      argv.insert(argv.end(), {"--pkey", fmt::format("0x{:x}", *q.pkey)});
      pq.component_mask |= kCompPkey;
      pq.pkey = *q.pkey;
      what += fmt::format(" pkey 0x{:x}", *q.pkey);
    }
    EXPECT_EQ(static_cast<int>(ours.policy->match(pq).level->sl), q.sl) << "rdma-qos, " << what;

    tb::RunResult r = ib.run_at(q.src, argv);
    ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.output;
    auto records = tb::parse_saquery_output(r.output);
    ASSERT_FALSE(records.empty()) << what << ": OpenSM returned no record\n" << r.output;
    auto answer = tb::path_answer(records[0]);
    ASSERT_TRUE(answer) << r.output;
    EXPECT_EQ(static_cast<int>(answer->sl), q.sl) << "OpenSM, " << what;
  }
}

TEST(OpenSmDifferential, FullPolicy) {
  expect_same_sl_as_opensm(full_policy_case());
}

TEST(OpenSmDifferential, UlpsCombinedWithAFullRule) {
  expect_same_sl_as_opensm(ulps_case());
}

TEST(OpenSmDifferential, NamesAndCombinations) {
  expect_same_sl_as_opensm(names_and_combinations_case());
}

TEST(OpenSmDifferential, CatchAllRuleAndCaseInsensitiveNames) {
  expect_same_sl_as_opensm(catch_all_case());
}

// tclass is an rdma-qos extension: OpenSM's parser rejects the whole file (ERR AC03 after a
// syntax error), and `policy check --opensm` says so at the same keyword.
TEST(OpenSmDifferential, OpenSmRejectsATClassPolicyWhereTheCompatibilityCheckWarns) {
  const std::string policy =
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: Gold\nsl: 3\nend-qos-level\nend-qos-levels\n"
      "qos-match-rules\nqos-match-rule\ntclass: 96\nqos-level-name: Gold\n"
      "end-qos-match-rule\nend-qos-match-rules\n";
  ParseResult ours = parse_policy(policy);
  ASSERT_TRUE(ours.ok());
  Diagnostics warned = opensm_compatibility(ours.policy);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].location.line, 13);
  auto fabric = tb::start_fat_tree(policy);
  const std::string log = fabric->opensm_log();
  EXPECT_NE(log.find("ERR AC05: Syntax error (line 13:"), std::string::npos) << log;
  EXPECT_NE(log.find("Failed parsing QoS policy file"), std::string::npos) << log;
}

}  // namespace
}  // namespace rdmaqos::policy
