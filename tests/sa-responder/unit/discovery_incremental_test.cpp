// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The incremental re-discovery's change detection on a simulated subnet (fake_smp_fabric.h):
// after each change (a link down or up, a node added or replaced, a LID moved, forwarding tables
// re-routed) its model is the one a full discovery makes of the subnet, JSON for JSON, and it
// reads again only the tables of ports that changed. And the pure parts: which tables a model
// holds, which the previous model supplies, the model in node GUID order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "discovery_incremental.h"
#include "fake_smp_fabric.h"
#include "rdma-qos/sa-responder/discovery_json.h"

namespace rdmaqos::sad {
namespace {

using testing::FakeFabric;
using ::testing::HasSubstr;

// The SM's CA at leaf 1; CAs 2..4 on leaf 1, 1..4 on leaf 2; leaves to two spines at ports 7
// and 8; leaf ports 5 and 6 free.
struct Subnet {
  FakeFabric f;
  int sm, leaf1, leaf2, spine1, spine2;
  std::vector<int> cas;  // leaf 1 ports 2..4, then leaf 2 ports 1..4
  Subnet() {
    sm = f.add_ca(0x1000, 1);
    leaf1 = f.add_switch(0x20, 8, 30);
    leaf2 = f.add_switch(0x21, 8, 31);
    spine1 = f.add_switch(0x22, 4, 32);
    spine2 = f.add_switch(0x23, 4, 33);
    f.self = sm;
    f.connect(sm, 1, leaf1, 1);
    uint16_t lid = 2;
    for (int p = 2; p <= 4; ++p, ++lid) {
      cas.push_back(f.add_ca(0x1000 + 0x10 * lid, lid));
      f.connect(cas.back(), 1, leaf1, p);
    }
    for (int p = 1; p <= 4; ++p, ++lid) {
      cas.push_back(f.add_ca(0x1000 + 0x10 * lid, lid));
      f.connect(cas.back(), 1, leaf2, p);
    }
    f.connect(leaf1, 7, spine1, 1);
    f.connect(leaf1, 8, spine2, 1);
    f.connect(leaf2, 7, spine1, 2);
    f.connect(leaf2, 8, spine2, 2);
    f.program();
  }
};

Discovery full(const FakeFabric& f) {
  auto d = assemble(f.full_scan());
  EXPECT_TRUE(d.has_value());
  return d ? std::move(*d) : Discovery{};
}

IncrementalOutcome incremental(FakeFabric& f, const Discovery& previous,
                               IncrementalLimits limits = {}) {
  f.gets = 0;
  f.gets_by_attr.clear();
  return incremental_discovery(f, previous, limits, nullptr);
}

// Why it fell back, "" when it did not.
std::string fallback_of(const IncrementalOutcome& out) {
  return out.fallback ? out.fallback->message : "";
}

// The fallback's code, nullopt without one.
std::optional<ErrorCode> fallback_code(const IncrementalOutcome& out) {
  if (!out.fallback) return std::nullopt;
  return out.fallback->code;
}

// The model as the daemon reads it: the JSON the discovery prints.
std::string json_of(const Discovery& d) {
  return fabric_json(d).dump();
}

TEST(IncrementalDiscovery, AnUnchangedSubnetIsCheckedWithoutReadingATable) {
  Subnet s;
  const Discovery before = full(s.f);
  ASSERT_TRUE(before.missing.empty());
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(before));
  EXPECT_EQ(out.tables_read, 0u);
  EXPECT_GT(out.tables_kept, 0u);
  EXPECT_EQ(s.f.gets_by_attr[0x16], 0u);  // no PKey table
  EXPECT_EQ(s.f.gets_by_attr[0x17], 0u);  // no SL2VL table
  EXPECT_EQ(s.f.gets_by_attr[0x10], 0u);  // no NodeDescription
  EXPECT_EQ(out.changes, "no change");
  // The check: NodeInfo of the local node, then through every linked port the walk leaves
  // by: the SM's port, leaf 1's five, each spine's one to leaf 2, leaf 2's five; one LFT block
  // per switch.
  EXPECT_EQ(s.f.gets_by_attr[0x11], 1u + 1 + 5 + 2 + 5);
  EXPECT_EQ(s.f.gets_by_attr[0x19], 4u);
  EXPECT_EQ(out.check_smps, s.f.gets);
}

TEST(IncrementalDiscovery, ACaLinkDownDropsTheCaAndReadsNoTable) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.disconnect(s.leaf2, 3);
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_EQ(out.found->model.nodes.size(), before.model.nodes.size() - 1);
  EXPECT_EQ(out.tables_read, 0u);
  EXPECT_NE(out.changes.find("0 node(s) added, 1 gone"), std::string::npos) << out.changes;
}

TEST(IncrementalDiscovery, ACaLinkUpReadsTheTablesOfItsTwoPortsOnly) {
  Subnet s;
  s.f.disconnect(s.leaf2, 3);
  const Discovery before = full(s.f);
  s.f.connect(s.cas[5], 1, s.leaf2, 3);
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  // leaf 2 links 1..4, 7, 8. Port 3 as output: from port 0 and the 5 other links; as input:
  // to the 5 other active ports; the CA's PKeys and SL2VL table.
  EXPECT_EQ(out.tables_read, 6u + 5 + 2);
  EXPECT_EQ(s.f.gets_by_attr[0x17], 6u + 5 + 1);
  EXPECT_EQ(s.f.gets_by_attr[0x16], 1u);
}

TEST(IncrementalDiscovery, ALinkUpButNotYetActiveIsTakenInAsAFullDiscoverySeesIt) {
  Subnet s;
  s.f.disconnect(s.leaf2, 3);
  const Discovery before = full(s.f);
  s.f.connect(s.cas[5], 1, s.leaf2, 3, /*active=*/false);  // LinkUp, Init: the SM not done
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  // Linked, so an input of the other ports' tables; not active, so no tables of its own.
  EXPECT_EQ(out.tables_read, 5u);
}

TEST(IncrementalDiscovery, ANewCaIsReadInFullWithItsDescription) {
  Subnet s;
  const int added = s.f.add_ca(0x9000, 40);
  s.f.program();
  const Discovery before = full(s.f);
  s.f.connect(added, 1, s.leaf2, 5);
  s.f.program();
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_EQ(s.f.gets_by_attr[0x10], 1u);
  EXPECT_NE(out.changes.find("1 node(s) added"), std::string::npos) << out.changes;
}

TEST(IncrementalDiscovery, AReplacedCaIsANewNode) {
  Subnet s;
  const Discovery before = full(s.f);
  // The HCA of a host swapped while the link was down: another GUID at the same place.
  s.f.nodes[static_cast<size_t>(s.cas[1])].guid = 0x7700;
  s.f.port(s.cas[1], 1).guid = 0x7701;
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_NE(out.changes.find("1 node(s) added, 1 gone"), std::string::npos) << out.changes;
  // The new CA's two, and leaf 1's through port 3, whose peer changed: 6 out, 5 in.
  EXPECT_EQ(out.tables_read, 2u + 6 + 5);
  EXPECT_EQ(s.f.gets_by_attr[0x10], 1u);
}

TEST(IncrementalDiscovery, ASpineLinkDownIsTakenInWithEveryReRoutedForwardingTable) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.disconnect(s.leaf1, 7);
  // The SM routes around it: every switch's forwarding table changes.
  for (auto& n : s.f.nodes)
    for (auto& port : n.lft) port = port == 0xFF ? port : static_cast<uint8_t>(1 + port % 3);
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_EQ(out.tables_read, 0u);
  EXPECT_NE(out.found->model.nodes[1].lft, before.model.nodes[1].lft);
}

TEST(IncrementalDiscovery, AForwardingTableThatGrewIsReadToItsNewTop) {
  Subnet s;
  const Discovery before = full(s.f);
  const int added = s.f.add_ca(0x9000, 200);  // LinearFDBTop 200: four blocks
  s.f.connect(added, 1, s.leaf2, 5);
  s.f.program();
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_EQ(s.f.gets_by_attr[0x19], 4u * 4);
}

TEST(IncrementalDiscovery, AMovedLidRereadsThatPortsTables) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.port(s.cas[4], 1).lid = 99;
  s.f.program();
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_EQ(out.tables_read, 2u);
  EXPECT_NE(out.changes.find("1 with another LID"), std::string::npos) << out.changes;
}

// The limit of the check: a table the SM rewrites on a port that stays as it was (another
// partitions.conf, new QoS SL2VL tables) is not seen; the periodic full re-discovery and
// `rdma-qos sad rediscover --full` take it in (rdma-qos-sad(8)).
TEST(IncrementalDiscovery, ATableRewrittenOnAnUnchangedPortIsLeftToAFullDiscovery) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.port(s.cas[2], 1).pkeys = {0xFFFF, 0x8001};
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(before));
  EXPECT_NE(json_of(*out.found), json_of(full(s.f)));
}

TEST(IncrementalDiscovery, ANodeThatDoesNotAnswerMeansAFullDiscovery) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.nodes[static_cast<size_t>(s.spine2)].mute = true;
  auto out = incremental(s.f, before);
  EXPECT_FALSE(out.found);
  EXPECT_THAT(fallback_of(out), HasSubstr("no NodeInfo from directed route 0,1,8"));
  EXPECT_EQ(fallback_code(out), ErrorCode::kMalformed);
}

TEST(IncrementalDiscovery, AnIncompleteModelInForceMeansAFullDiscovery) {
  Subnet s;
  Discovery before = full(s.f);
  before.missing.push_back("no SL2VL table from LID 3");
  auto out = incremental(s.f, before);
  EXPECT_FALSE(out.found);
  EXPECT_EQ(fallback_of(out), "the model in force is incomplete");
  EXPECT_EQ(fallback_code(out), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.f.gets, 0u);
}

TEST(IncrementalDiscovery, AnotherNodesModelMeansAFullDiscovery) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.self = s.cas[0];
  auto out = incremental(s.f, before);
  EXPECT_FALSE(out.found);
  EXPECT_THAT(fallback_of(out), HasSubstr("discovery runs at node"));
  EXPECT_EQ(fallback_code(out), ErrorCode::kMalformed);
}

TEST(IncrementalDiscovery, TooManyChangedTablesMeanAFullDiscovery) {
  Subnet s;
  s.f.disconnect(s.leaf2, 3);
  const Discovery before = full(s.f);
  s.f.connect(s.cas[5], 1, s.leaf2, 3);
  auto out = incremental(s.f, before, IncrementalLimits{0.01});
  EXPECT_FALSE(out.found);
  EXPECT_THAT(fallback_of(out), HasSubstr("tables changed"));
  EXPECT_EQ(fallback_code(out), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.f.gets_by_attr[0x17], 0u);
}

TEST(IncrementalDiscovery, ACableMovedBetweenSwitchPortsIsSeenAtBothEnds) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.disconnect(s.leaf2, 7);
  s.f.connect(s.leaf2, 6, s.spine1, 3);
  auto out = incremental(s.f, before);
  ASSERT_TRUE(out.found) << fallback_of(out);
  EXPECT_EQ(json_of(*out.found), json_of(full(s.f)));
  EXPECT_GT(out.tables_read, 0u);
}

// --- the pure parts ---

TEST(PlanTables, NamesTheTablesAFullDiscoveryReads) {
  Subnet s;
  s.f.disconnect(s.leaf2, 4);
  Scan scan = s.f.full_scan();
  const auto plan = plan_tables(scan);
  auto count = [&](uint64_t guid, TableRef::Kind kind) {
    return std::count_if(plan.begin(), plan.end(), [&](const TableRef& t) {
      return scan.nodes[t.node].ni.node_guid == guid && t.kind == kind;
    });
  };
  // leaf 2: port 0 PKeys; links 1..3, 7, 8 active: each as output from port 0 and 4 others.
  EXPECT_EQ(count(0x21, TableRef::Kind::kPKeys), 1);
  EXPECT_EQ(count(0x21, TableRef::Kind::kSl2Vl), 5 * 5);
  EXPECT_EQ(count(0x1000, TableRef::Kind::kPKeys), 1);
  EXPECT_EQ(count(0x1000, TableRef::Kind::kSl2Vl), 1);
}

TEST(TakeOverTables, ASwitchTableIsReadAgainWhenALinkAtEitherPortChanged) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.disconnect(s.leaf2, 7);
  s.f.connect(s.leaf2, 7, s.spine1, 4);  // the cable moved to another spine port
  Scan scan = s.f.full_scan();
  for (auto& n : scan.nodes)
    for (auto& p : n.ports) {
      p.pkeys.clear();
      p.pkeys_read = false;
      p.sl2vl.clear();
    }
  const auto plan = plan_tables(scan);
  const auto left = take_over_tables(scan, plan, before.model);
  for (const TableRef& t : plan) {
    const uint64_t guid = scan.nodes[t.node].ni.node_guid;
    const bool touches =
        (guid == 0x21 && t.kind == TableRef::Kind::kSl2Vl && (t.port == 7 || t.in == 7)) ||
        (guid == 0x22 && t.kind == TableRef::Kind::kSl2Vl &&
         (t.port == 2 || t.in == 2 || t.port == 4 || t.in == 4));
    const bool read = std::find(left.begin(), left.end(), t) != left.end();
    EXPECT_EQ(read, touches) << std::hex << guid << std::dec << " " << int(t.in) << "->"
                             << int(t.port);
  }
  // What was taken over is what the model held.
  auto d = assemble(scan);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->missing.size(), left.size());
}

TEST(Assemble, GivesNodesInGuidOrderWhateverTheScanOrder) {
  Subnet s;
  Scan scan = s.f.full_scan();
  auto a = assemble(scan);
  std::reverse(scan.nodes.begin(), scan.nodes.end());
  auto b = assemble(scan);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(json_of(*a), json_of(*b));
  for (size_t i = 1; i < a->model.nodes.size(); ++i)
    EXPECT_LT(a->model.nodes[i - 1].guid, a->model.nodes[i].guid);
  EXPECT_EQ(a->model.port(a->self).guid, 0x1001u);
}

TEST(Assemble, NamesEveryTableTheScanLacks) {
  Subnet s;
  Scan scan = s.f.full_scan();
  scan.node(0x1020)->ports[1].sl2vl.clear();
  scan.node(0x21)->ports[0].pkeys_read = false;
  auto d = assemble(scan);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->missing,
            (std::vector<std::string>{"no PKey table from LID 31", "no SL2VL table from LID 2"}));
}

TEST(CompareModels, CountsWhatCameWentAndMoved) {
  Subnet s;
  const Discovery before = full(s.f);
  s.f.disconnect(s.leaf2, 1);
  s.f.port(s.cas[4], 1).lid = 77;
  const Discovery after = full(s.f);
  const ModelChanges c = compare_models(before.model, after.model);
  EXPECT_EQ(c.nodes_added, 0u);
  EXPECT_EQ(c.nodes_gone, 1u);
  EXPECT_EQ(c.links_changed, 1u);  // leaf 2 port 1; the CA itself is gone
  EXPECT_EQ(c.lids_changed, 1u);
}

// The model's JSON line, written directly, is what nlohmann::json writes for it, and reads back
// to the same model; a description with quotes, control characters and bytes that are not UTF-8
// (whatever a node answers) stays valid JSON.
TEST(ModelJson, TheLineReadsBackToTheSameModel) {
  Subnet s;
  s.f.nodes[static_cast<size_t>(s.cas[0])].description = "a \"b\"\\ \t\x01 \xc3\xbc \xff end";
  const Discovery d = full(s.f);
  const std::string line = fabric_json_line(d);
  EXPECT_EQ(line, nlohmann::json::parse(line).dump());
  auto back = discovery_from_json_text(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(fabric_json_line(*back), line);
  EXPECT_NE(line.find("a \\\"b\\\"\\\\ \\t\\u0001 \xc3\xbc \xef\xbf\xbd end"), std::string::npos);
  EXPECT_FALSE(discovery_from_json_text(line.substr(0, line.size() / 2)));
  EXPECT_FALSE(discovery_from_json_text("[]"));
}

TEST(SmpWindow, GetsGoRoundRobinOverTheirDestinations) {
  auto lid = [](uint16_t l, uint32_t mod) {
    SmpGet g;
    g.lid = l;
    g.mod = mod;
    return g;
  };
  auto dr = [](std::vector<uint8_t> path, uint32_t mod) {
    SmpGet g;
    g.directed = true;
    g.path = std::move(path);
    g.mod = mod;
    return g;
  };
  // Three to LID 5, one to LID 6, two along route 1,3 (not LID 3's), one to the local node.
  const std::vector<SmpGet> gets = {lid(5, 0),     lid(5, 1),     lid(5, 2), lid(6, 0),
                                    dr({1, 3}, 0), dr({1, 3}, 1), lid(3, 0), dr({}, 0)};
  EXPECT_EQ(interleaved(gets), (std::vector<size_t>{0, 3, 4, 6, 7, 1, 5, 2}));
}

}  // namespace
}  // namespace rdmaqos::sad
