// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin against OpenSM alone on fabrics with loops, under every routing engine, QoS on and
// off: the same MAD bytes (sa-raw-mad at node001) go to OpenSM with the plugin answering, then
// with the plugin paused (OpenSM's own handlers answer, on the same routing), and every answer
// must be the same to the byte. On a looped fabric LASH, DFSSSP and Nue give paths different SLs
// (their deadlock-free layers); a fat tree, where every engine gives SL 0, cannot show a wrong SL.
// Then rdma-qos-sad on the same files: refused under an engine that gives paths SLs, and
// elsewhere (QoS on) in OpenSM's place at sm01, answering as OpenSM's own handlers did.
// The CI slice is one ring under five engines and `file` (LFTs OpenSM dumped), a 3x3 torus under
// torus-2QoS and a 40-switch random graph (sampled pairs); the soak matrix adds tori (torus-2QoS
// in 2D and 3D), meshes, dragonfly-like groups, random graphs, LMC 1, every engine, and fabrics
// of 144 to 150 switches and a 1,980-CA fat tree (Documentation/testing.md).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/raw_mad.h"
#include "rdma-qos/testbed/topology.h"
#include "rdma-qos/testbed/torus_2qos_conf.h"

#include "lfts_dump.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;
using testbed::IbFabricOptions;
namespace raw = testbed::raw;

// Levels with SLs (one per Service-ID range) and a default, so the hint OpenSM gives the
// routing engine is not always 0. Bulk's SL is the case's: torus-2QoS keeps only bit 3 of the
// hint (its QoS class), so its cases give Bulk an SL of 8 or more.
std::string policy(int bulk_sl) {
  return fmt::format(R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: Storage
    sl: 1
  end-qos-level
  qos-level
    name: Bulk
    sl: {}
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x1000-0x10FF
    qos-level-name: Storage
  end-qos-match-rule
  qos-match-rule
    service-id: 0x2000
    qos-level-name: Bulk
  end-qos-match-rule
end-qos-match-rules
)",
                     bulk_sl);
}

// Partitions with SLs: with QoS off OpenSM overrides them to 0.
constexpr const char* kPartitions =
    "Default=0x7fff, ipoib, sl=2 : ALL=full;\n"
    "Storage=0x8001, sl=1 : ALL=full;\n";

struct Case {
  std::string name;
  testbed::SwitchGraphSpec spec;
  std::string engine;
  bool qos = true;
  bool policy = true;
  int lmc = 0;
  // The engine gives this fabric's paths more than one SL (checked on OpenSM's answers, so
  // the case really exercises the routing engine's SLs).
  bool layered = false;
  std::string extra_conf = {};  // more opensm.conf lines
  // The torus's radices, for torus-2QoS (which finds no torus without its torus-2QoS.conf).
  std::optional<testbed::TorusRadix> torus = {};
  int bulk_sl = 3;  // the Bulk level's SL
  // Fabrics of hundreds of switches: this many CA pairs (and a quarter as many CA-to-switch
  // pairs) drawn from a fixed seed instead of every pair; 0 asks every pair.
  int sampled_pairs = 0;
  // A fat tree instead of `spec`.
  std::optional<testbed::FatTreeSpec> tree = {};
  // routing_engine file: the LFTs OpenSM dumped from a first run under this engine, and with
  // lft_holes, without the routes to `hole` but on its own switch (one-way and missing paths).
  std::string lfts_from = {};
  bool lft_holes = false;
  std::string hole = "node002";
  // The engine that routes (OpenSM falls back along its list when one fails); empty: unchecked.
  std::string routed_by = {};
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

// The queries: every ordered pair of CA ports and every CA to every switch (or, on a large
// fabric, a seeded sample of them), plain, with an SL requested (0 to 2), with each level's
// Service-ID and with a P_Key; a GetTable per source (four on a large fabric);
// PathRecords to multicast groups (node001 joins one first); PathRecords and a MultiPathRecord
// naming node001's alias GUID; MultiPathRecords from node001.
// The alias GUID node001 registers before the queries, as an SR-IOV virtual function does.
constexpr uint64_t kAlias = 0x0002c903abcd0001ULL;

struct Queries {
  std::vector<std::string> mads;
  // [live_begin, live_end): the queries answered from the SA's live state (multicast groups
  // joined, alias GUIDs registered), which rdma-qos-sad does not keep: its documented decisions
  // (rdma-qos-sad(8)). Every other answer depends only on the fabric, policy and partitions.
  size_t live_begin = 0, live_end = 0;
  bool live(size_t i) const { return i >= live_begin && i < live_end; }
};

Queries queries(const testbed::Topology& t, int sampled_pairs) {
  using raw::Mad;
  using Node = testbed::TopoNode;
  Queries q;
  std::vector<std::string>& out = q.mads;
  std::vector<const Node*> cas, switches, all;
  for (const auto& n : t.nodes) {
    all.push_back(&n);
    (n.kind == testbed::NodeKind::kCa ? cas : switches).push_back(&n);
  }
  auto path = [](uint8_t method, const Node& s, const Node& d, uint64_t extra) {
    Mad m = raw::sa_mad(method, raw::kPathRecord, raw::prm::kSlid | raw::prm::kDlid | extra);
    m.put(raw::kData + raw::pr::kSlid, s.lid, 2);
    m.put(raw::kData + raw::pr::kDlid, d.lid, 2);
    return m;
  };
  auto ask_pair = [&](const Node& s, const Node& d) {
    out.push_back(path(raw::kGet, s, d, 0).hex());
    if (d.kind != testbed::NodeKind::kCa) return;
    for (uint8_t sl : {0, 1, 2}) {
      Mad m = path(raw::kGet, s, d, raw::prm::kSl);
      m.put(raw::kData + raw::pr::kQosSl, sl, 2);
      out.push_back(m.hex());
    }
    for (uint64_t sid : {0x1010, 0x2000}) {
      Mad m = path(raw::kGet, s, d, raw::prm::kServiceId);
      m.put(raw::kData + raw::pr::kServiceId, sid, 8);
      out.push_back(m.hex());
    }
    Mad m = path(raw::kGet, s, d, raw::prm::kPKey);
    m.put(raw::kData + raw::pr::kPKey, 0xFFFF, 2);
    out.push_back(m.hex());
  };
  auto table = [&](const Node& s) {
    Mad m = raw::sa_mad(raw::kGetTable, raw::kPathRecord, raw::prm::kSlid);
    m.put(raw::kData + raw::pr::kSlid, s.lid, 2);
    out.push_back(m.hex());
  };
  // The MultiPathRecord destinations from node001 (below): every CA, or a sample.
  std::vector<const Node*> multipath_to = cas;
  if (sampled_pairs == 0) {
    for (const auto* s : cas) {
      for (const auto* d : all) ask_pair(*s, *d);
      table(*s);
    }
  } else {
    // mt19937's sequence is fixed by the standard (its distributions are not): the same pairs
    // on every host.
    std::mt19937 pick(31);
    auto any = [&pick](const std::vector<const Node*>& v) { return v[pick() % v.size()]; };
    for (int i = 0; i < sampled_pairs; ++i) ask_pair(*any(cas), *any(cas));
    for (int i = 0; i < sampled_pairs / 4; ++i) ask_pair(*any(cas), *any(switches));
    for (int i = 0; i < 4; ++i) table(*any(cas));
    multipath_to.clear();
    for (int i = 0; i < 32; ++i) multipath_to.push_back(any(cas));
  }
  const testbed::TopoNode& from = t.node("node001");
  q.live_begin = out.size();
  // node001 joins the IPoIB broadcast group (a live member OpenSM knows, no SA but OpenSM's
  // does), then PathRecords to it and to no group, from a member and a non-member: OpenSM
  // answers them from its live groups.
  constexpr uint64_t kIpoibPrefix = 0xff12401bffff0000ULL, kIpoibId = 0xffffffffULL;
  out.push_back(raw::join_group(kIpoibPrefix, kIpoibId, from.port_guid).hex());
  for (uint64_t id : {kIpoibId, uint64_t{0x9999}}) {
    for (const auto* s : {&from, &t.node("node002")}) {
      Mad m = raw::sa_mad(raw::kGet, raw::kPathRecord, raw::prm::kDgid | raw::prm::kSgid);
      m.gid(raw::kData + raw::pr::kDgid, kIpoibPrefix, id);
      m.gid(raw::kData + raw::pr::kSgid, raw::kLinkLocal, s->port_guid);
      out.push_back(m.hex());
    }
    Mad any = raw::sa_mad(raw::kGet, raw::kPathRecord, raw::prm::kDgid);
    any.gid(raw::kData + raw::pr::kDgid, kIpoibPrefix, id);
    out.push_back(any.hex());
  }
  // PathRecords and a MultiPathRecord naming node001's alias GUID (registered before the
  // queries): OpenSM resolves the alias to node001's port.
  const testbed::TopoNode& other = t.node("node002");
  for (uint64_t mask : {raw::prm::kSgid | raw::prm::kDgid, raw::prm::kDgid}) {
    Mad to = raw::sa_mad(raw::kGet, raw::kPathRecord, mask);
    to.gid(raw::kData + raw::pr::kDgid, raw::kLinkLocal, kAlias);
    to.gid(raw::kData + raw::pr::kSgid, raw::kLinkLocal, other.port_guid);
    out.push_back(to.hex());
    Mad back = raw::sa_mad(raw::kGet, raw::kPathRecord, mask);
    back.gid(raw::kData + raw::pr::kDgid, raw::kLinkLocal, other.port_guid);
    back.gid(raw::kData + raw::pr::kSgid, raw::kLinkLocal, kAlias);
    out.push_back(back.hex());
  }
  {
    Mad m = raw::sa_mad(raw::kGetMulti, raw::kMultiPathRecord,
                        raw::mprm::kSgidCount | raw::mprm::kDgidCount);
    raw::one_rmpp_segment(m, 2);
    m.put(raw::kData + 15, 1, 1);
    m.put(raw::kData + 16, 1, 1);
    m.gid(raw::kData + 24, raw::kLinkLocal, kAlias);
    m.gid(raw::kData + 40, raw::kLinkLocal, other.port_guid);
    out.push_back(m.hex());
  }
  q.live_end = out.size();
  for (const auto* d : multipath_to) {
    Mad m = raw::sa_mad(raw::kGetMulti, raw::kMultiPathRecord,
                        raw::mprm::kSgidCount | raw::mprm::kDgidCount | raw::mprm::kNumbPath);
    raw::one_rmpp_segment(m, 2);
    m.put(raw::kData + 5, 4, 1);  // NumbPath
    m.put(raw::kData + 15, 1, 1);
    m.put(raw::kData + 16, 1, 1);
    m.gid(raw::kData + 24, raw::kLinkLocal, from.port_guid);
    m.gid(raw::kData + 40, raw::kLinkLocal, d->port_guid);
    out.push_back(m.hex());
  }
  return q;
}

// UPDN and DNUP (routing, or making the LFTs `file` reads) run with switch 0 named as their root
// (root_guid_file): on graphs without CAs at one end their own root detection finds none, and
// OpenSM falls back to min-hop.
bool rooted(const Case& c) {
  for (const std::string& e : {c.engine, c.lfts_from})
    if (e == "updn" || e == "dnup") return !c.tree;
  return false;
}

IbFabricOptions options(const Case& c) {
  testbed::SwitchGraphSpec spec = c.spec;
  spec.lmc = c.lmc;
  testbed::FatTreeSpec tree = c.tree.value_or(testbed::FatTreeSpec{});
  tree.lmc = c.lmc;
  IbFabricOptions o = testbed::fabric_options(c.tree ? testbed::make_fat_tree(tree)
                                                     : testbed::make_switch_graph(spec));
  o.lmc = c.lmc;
  o.qos = c.qos;
  o.policy = c.policy ? policy(c.bulk_sl) : "";
  o.partitions = kPartitions;
  // Nue uses one VL unless told more; with several it gives paths SLs as DFSSSP does.
  o.opensm_conf = "routing_engine " + c.engine + "\nnue_max_num_vls 4\n" + c.extra_conf;
  if (rooted(c)) {
    o.files["roots"] = fmt::format("0x{:016x}\n", o.topology.node("sw01").node_guid);
    o.opensm_conf += "root_guid_file @DIR@/roots\n";
  }
  if (c.torus) {
    o.files["torus-2QoS.conf"] = testbed::torus_2qos_conf(o.topology, *c.torus);
    o.opensm_conf += "torus_config @DIR@/torus-2QoS.conf\n";
  }
  // A large fabric's first sweep and routing take minutes under LASH or DFSSSP.
  o.start_timeout = std::chrono::seconds(c.sampled_pairs != 0 ? 1800 : 120);
  o.pin_random = true;
  return o;
}

// routing_engine file on the LFTs a first OpenSM run under c.lfts_from wrote (with holes for
// c.lft_holes): the engine the plugin then answers beside is `file`.
void route_from_file(const Case& c, IbFabricOptions& o) {
  IbFabricOptions first = o;
  first.opensm_conf = rooted(c) ? "root_guid_file @DIR@/roots\n" : "";
  std::string dump = dump_lfts(first, c.lfts_from);
  if (c.lft_holes) {
    const testbed::TopoNode& to = o.topology.node(c.hole);
    dump = without_routes_to(dump, o.topology.node(to.leaf).node_guid, to.lid, 1 << c.lmc);
  }
  o.files["lfts.dump"] = dump;
  o.opensm_conf += "lfts_file @DIR@/lfts.dump\n";
}

bool wait_for_log(const IbFabric& f, const std::string& text) {
  for (int i = 0; i < 300; ++i) {
    if (f.opensm_log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Every answer, one JSON line a query, in the order asked.
std::vector<std::string> ask(const IbFabric& f, const std::vector<std::string>& mads) {
  const std::string file = f.dir() + "/mads.hex";
  {
    std::ofstream out(file);
    for (const auto& m : mads) out << m << "\n";
  }
  auto r = f.run_at("node001", {RDMA_QOS_SA_RAW_MAD, "--from", file, "--timeout", "3000"},
                    std::chrono::minutes(5));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  std::vector<std::string> lines;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() == '{') lines.push_back(line);
  return lines;
}

// The SL of a PathRecord answer (SA data byte 53, low nibble); -1 for no record.
int answered_sl(const std::string& line) {
  auto j = nlohmann::json::parse(line);
  if (!j.value("answered", false) || j.value("status", "") != "0x0000" ||
      j.value("attr_id", "") != "0x0035")
    return -1;
  const std::string data = j.value("data", "");
  if (data.size() < 2 * 54) return 0;  // trailing zero bytes are cut
  return std::stoi(data.substr(2 * 53, 2), nullptr, 16) & 0xF;
}

// Whether a PathRecord answer's record is reversible (data byte 49, bit 7).
bool answered_reversible(const std::string& line) {
  const std::string data = nlohmann::json::parse(line).value("data", "");
  return data.size() >= 2 * 50 && (std::stoi(data.substr(2 * 49, 2), nullptr, 16) & 0x80) != 0;
}

// A 16-bit field of a PathRecord answer's record (SA data byte `at`); -1 when it is cut.
int answered_u16(const std::string& line, size_t at) {
  const std::string data = nlohmann::json::parse(line).value("data", "");
  return data.size() >= 2 * (at + 2) ? std::stoi(data.substr(2 * at, 4), nullptr, 16) : -1;
}

class RoutingDifferential : public ::testing::TestWithParam<Case> {};

// Where rdma-qos-sad is meant to run: QoS on (with qos FALSE OpenSM applies no policy, the
// daemon the one it is given: a documented decision), routed by an engine that gives no path its
// own SL.
bool sad_runs_here(const Case& c) {
  return c.qos && !rdmaqos::policy::routing_engine_assigns_sls(c.engine) &&
         !rdmaqos::policy::routing_engine_assigns_sls(c.lfts_from);
}

// rdma-qos-sad on the same fabric and files: where it is meant to run it takes over the SM's
// port once OpenSM stops and answers every query OpenSM answered from the fabric, policy and
// partitions as OpenSM did (`opensm`: OpenSM's own handlers' answers); where the engine gives
// paths their own SLs it refuses to start (exit 78), since it cannot see them.
void check_rdma_qos_sad(IbFabric& f, const Case& c, const IbFabricOptions& o, const Queries& q,
                        const std::vector<std::string>& opensm) {
  const std::string dir = f.dir() + "/";
  // The opensm.conf OpenSM read (the test bed writes it with @DIR@ filled in).
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_SAD,        "--foreground", "--opensm-conf",
            dir + "opensm.conf", "--partitions", dir + "sad-partitions.conf"};
  std::ofstream(dir + "sad-partitions.conf") << kPartitions;
  if (c.policy) {
    std::ofstream(dir + "sad-policy.conf") << policy(c.bulk_sl);
    p.argv.insert(p.argv.end(), {"--policy", dir + "sad-policy.conf"});
  } else {
    p.argv.push_back("--no-policy");
  }
  p.env = f.client_env(o.topology.sm_node().id);
  p.cwd = f.dir();
  p.output_path = dir + "sad.log";
  if (rdmaqos::policy::routing_engine_assigns_sls(c.engine) ||
      rdmaqos::policy::routing_engine_assigns_sls(c.lfts_from)) {
    // Refused before it touches the fabric, so OpenSM may go on running.
    p.output_path.clear();
    auto r = testbed::run(p, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 78) << r.output;
    EXPECT_NE(r.output.find("gives each path its own SL, which rdma-qos-sad cannot see"),
              std::string::npos)
        << r.output;
    return;
  }
  if (!sad_runs_here(c)) return;
  f.stop_sm();
  auto started = f.start_until_answering(p, {"saquery", "-c"});
  ASSERT_EQ(started.probe.exit_code, 0) << started.probe.output;
  // Not compared: the queries about live state, and those OpenSM answered naming node001's
  // alias GUID (it may put an alias in a record's SGID or DGID even for a query by LID).
  std::vector<std::string> fabric_only;
  std::vector<size_t> index;
  const std::string alias = fmt::format("{:016x}", kAlias);
  size_t aliased = 0;
  for (size_t i = 0; i < q.mads.size(); ++i) {
    if (q.live(i)) continue;
    if (opensm[i].find(alias) != std::string::npos) {
      ++aliased;
      continue;
    }
    fabric_only.push_back(q.mads[i]);
    index.push_back(i);
  }
  const std::vector<std::string> ours = ask(f, fabric_only);
  started.daemon->stop();
  ASSERT_EQ(ours.size(), fabric_only.size());
  size_t differ = 0;
  for (size_t k = 0; k < ours.size(); ++k) {
    if (opensm[index[k]] == ours[k]) continue;
    if (++differ <= 5) {
      ADD_FAILURE() << "query " << index[k] << ": " << fabric_only[k].substr(0, 160)
                    << "\n  OpenSM:       " << opensm[index[k]] << "\n  rdma-qos-sad: " << ours[k];
    }
  }
  std::cout << c.name << ": rdma-qos-sad: " << ours.size() << " queries (" << aliased
            << " answered with the alias GUID left out), " << differ << " answers differ\n";
  EXPECT_GT(ours.size(), q.mads.size() / 2);
  EXPECT_EQ(differ, 0u) << differ << " of " << ours.size() << " answers of rdma-qos-sad differ";
}

// `rdma-qos opensm-plugin COMMAND --json` against the fabric's plugin; its exit code.
int plugin_command(const IbFabric& f, const std::string& command, std::string* output = nullptr) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_CLI, "opensm-plugin", command, "--socket", f.dir() + "/plugin.sock", "--json"};
  auto r = testbed::run(p, std::chrono::seconds(30));
  if (output != nullptr) *output = r.output;
  return r.exit_code;
}

// One OpenSM, one routing: the plugin answers every query, then (paused) OpenSM's own handlers
// answer the same queries. Two OpenSM runs cannot be compared: DFSSSP and Nue may lay out their
// layers differently from one run to the next.
TEST_P(RoutingDifferential, ThePluginAnswersAsOpenSmsOwnHandlers) {
  const Case& c = GetParam();
  IbFabricOptions o = options(c);
  if (!c.lfts_from.empty()) route_from_file(c, o);
  const Queries asked = queries(o.topology, c.sampled_pairs);
  const std::vector<std::string>& mads = asked.mads;
  o.opensm_conf +=
      "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
      "event_plugin_options control-socket=@DIR@/plugin.sock" +
      std::string(c.policy ? "" : " policy=none") + "\n";
  o.opensm_env["LD_LIBRARY_PATH"] = RDMA_QOS_OSM_PLUGIN_DIR;
  const auto started = std::chrono::steady_clock::now();
  IbFabric f(o);
  ASSERT_TRUE(wait_for_log(f, c.qos ? "rdma-qos plugin: answering" : "runs with qos FALSE"))
      << f.opensm_log().substr(0, 4000);
  const double up_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!c.lfts_from.empty()) {
    // The file was read: otherwise OpenSM would route by min-hop under the name `file`.
    EXPECT_TRUE(wait_for_log(f, "file tables configured")) << f.opensm_log().substr(0, 4000);
    EXPECT_EQ(f.opensm_log().find("ERR 630"), std::string::npos) << f.opensm_log().substr(0, 4000);
  }
  if (c.torus && !c.qos) {
    // torus-2QoS refuses to route without QoS; OpenSM's fallback engine routes instead, and the
    // plugin, with QoS off, hands every query to OpenSM's own handlers.
    EXPECT_TRUE(wait_for_log(f, "ERR 4E44")) << f.opensm_log().substr(0, 4000);
    EXPECT_TRUE(wait_for_log(f, "minhop tables configured")) << f.opensm_log().substr(0, 4000);
  }
  std::string status;
  EXPECT_EQ(plugin_command(f, "status", &status), c.qos ? 0 : 1) << status;
  if (c.layered) {
    EXPECT_NE(status.find("\"assigns_sl\": true"), std::string::npos) << status;
  }

  // node001 registers an alias GUID (SubnAdmSet(GUIDInfoRecord), index 1); OpenSM's answers for
  // node001 may then carry it, and the plugin follows the change with a new model.
  auto models = [&f] {
    std::string stats;
    plugin_command(f, "stats", &stats);
    const auto at = stats.find('{');
    if (at == std::string::npos) return -1;
    const auto j = nlohmann::json::parse(stats.substr(at), nullptr, false);
    return j.is_object() ? j["fabric"].value("models", -1) : -1;
  };
  const int before = models();
  auto set = f.run_at(
      "node001",
      {RDMA_QOS_SA_RAW_MAD, raw::set_alias_guid(o.topology.node("node001").lid, 1, kAlias).hex()});
  ASSERT_NE(set.output.find("\"status\":\"0x0000\""), std::string::npos) << set.output;
  if (c.qos) {
    for (int i = 0; i < 100 && models() <= before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_GT(models(), before) << "no new model after the alias GUID";
  }

  const std::vector<std::string> ours = ask(f, mads);
  if (c.qos) {
    // The plugin itself answered the unicast PathRecords (OpenSM's handlers only the multicast,
    // alias and, where the engine assigns SLs, MultiPathRecord queries).
    std::string stats;
    ASSERT_EQ(plugin_command(f, "stats", &stats), 0);
    const auto at = stats.find('{');
    ASSERT_NE(at, std::string::npos) << stats;
    const auto j = nlohmann::json::parse(stats.substr(at), nullptr, false);
    EXPECT_GT(j.value("responses", size_t{0}), mads.size() / 2) << stats;
    EXPECT_FALSE(j["fallback_reasons"].contains("no_pkey_table")) << stats;
  }
  ASSERT_EQ(plugin_command(f, "pause"), 0);
  const std::vector<std::string> opensm = ask(f, mads);
  ASSERT_EQ(plugin_command(f, "resume"), 0);
  if (c.layered && c.qos) {
    // `opensm-plugin explain` shows the routing engine's SL, as the answers carry it: for each
    // SL OpenSM answered a plain query (SLID and DLID alone) with, the first such query.
    std::set<int> explained;
    for (size_t i = 0; i < opensm.size(); ++i) {
      const int sl = answered_sl(opensm[i]);
      if (sl < 0 || explained.contains(sl) ||
          opensm[i].find("\"comp_mask\":\"0x30\"") == std::string::npos)
        continue;
      const int dlid = answered_u16(opensm[i], 40), slid = answered_u16(opensm[i], 42);
      if (dlid < 0 || slid < 0) continue;
      testbed::ProcessOptions p;
      p.argv = {RDMA_QOS_CLI,
                "opensm-plugin",
                "explain",
                "--socket",
                f.dir() + "/plugin.sock",
                "--slid",
                std::to_string(slid),
                "--dlid",
                std::to_string(dlid),
                "--json"};
      auto r = testbed::run(p, std::chrono::seconds(30));
      const auto at = r.output.find('{');
      ASSERT_NE(at, std::string::npos) << r.output;
      const auto e = nlohmann::json::parse(r.output.substr(at), nullptr, false);
      ASSERT_TRUE(e.is_object() && e.contains("records") && !e["records"].empty()) << r.output;
      EXPECT_EQ(e["records"][0].value("sl", -1), sl)
          << "explain of " << slid << " -> " << dlid << ": " << r.output;
      explained.insert(sl);
    }
    EXPECT_GT(explained.size(), 1u) << "explained one SL only: the check tests nothing";
  }
  ASSERT_EQ(ours.size(), mads.size());
  ASSERT_EQ(opensm.size(), mads.size());

  // The SLs of plain queries (SLID and DLID alone): the default level's or the partition's SL
  // unless the routing engine gives paths their own.
  std::set<int> sls;
  for (const auto& line : opensm)
    if (int sl = answered_sl(line);
        sl >= 0 && line.find("\"comp_mask\":\"0x30\"") != std::string::npos)
      sls.insert(sl);
  ASSERT_FALSE(sls.empty()) << "OpenSM answered no PathRecord";
  if (c.layered) {
    EXPECT_GT(sls.size(), 1u) << c.engine << " gave every path one SL: the case tests nothing";
  }
  if (c.lft_holes) {
    // The holes show: paths to the hole not found, paths from it not reversible.
    size_t missing = 0, one_way = 0;
    for (const auto& line : opensm) {
      if (line.find("\"comp_mask\":\"0x30\"") == std::string::npos) continue;
      if (answered_sl(line) < 0)
        ++missing;
      else if (!answered_reversible(line))
        ++one_way;
    }
    EXPECT_GT(missing, 0u) << "every path found: the holes test nothing";
    EXPECT_GT(one_way, 0u) << "every path reversible: the holes test nothing";
  }
  if (c.policy && c.qos && c.bulk_sl >= 8) {
    // The Bulk level's SL reached the engine as its hint and its high bit came back.
    bool high = false;
    for (const auto& line : opensm) high = high || answered_sl(line) >= 8;
    EXPECT_TRUE(high) << "no answer carries SL 8 or more: Bulk's SL " << c.bulk_sl << " is lost";
  }
  size_t differ = 0;
  for (size_t i = 0; i < mads.size(); ++i) differ += opensm[i] == ours[i] ? 0 : 1;
  // OpenSM's start-up (first sweep and routing) and the engine that routed (OpenSM falls back
  // along its list when one fails): the figures that say which engines a fabric can take.
  std::string routed = "?";
  if (std::string st; plugin_command(f, "stats", &st) == 0 && st.find('{') != std::string::npos) {
    const auto j = nlohmann::json::parse(st.substr(st.find('{')), nullptr, false);
    if (j.is_object() && j.contains("routing")) routed = j["routing"].value("engine", "?");
  }
  std::cout << c.name << ": " << o.topology.nodes.size() << " nodes, OpenSM up in " << up_seconds
            << " s, routed by " << routed << ", " << sls.size() << " SL(s), " << mads.size()
            << " queries, " << differ << " answers differ\n";
  if (routed != c.engine) {
    // Why OpenSM fell back: the first error line is the engine's.
    const std::string log = f.opensm_log();
    if (const auto at = log.find(" ERR "); at != std::string::npos)
      std::cout << "  " << log.substr(at, log.find('\n', at) - at) << "\n";
  }
  if (!c.routed_by.empty()) {
    EXPECT_EQ(routed, c.routed_by);
  }
  differ = 0;
  for (size_t i = 0; i < mads.size(); ++i) {
    if (opensm[i] == ours[i]) continue;
    if (++differ <= 5) {
      ADD_FAILURE() << "query " << i << ": " << mads[i].substr(0, 160)
                    << "\n  OpenSM:      " << opensm[i] << "\n  the plugin:  " << ours[i];
    }
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << mads.size() << " answers differ (" << c.engine
                        << ", qos " << c.qos << ")";
  check_rdma_qos_sad(f, c, o, asked, opensm);
}

std::vector<Case> ci_cases() {
  std::vector<Case> out;
  const testbed::SwitchGraphSpec ring = testbed::ring_spec(6, 2);
  for (const char* engine : {"lash", "dfsssp", "nue", "updn", "minhop"}) {
    const bool layered = std::string(engine) == "lash" || std::string(engine) == "dfsssp" ||
                         std::string(engine) == "nue";
    out.push_back({fmt::format("ring6_{}_qos", engine), ring, engine, true, true, 0, layered});
    out.back().routed_by = engine;
    out.push_back({fmt::format("ring6_{}_noqos", engine), ring, engine, false, false, 0, false});
    out.back().routed_by = engine;
  }
  // HDR links (1x HDR CAs: 50 Gb/s, rate code 20) under use_original_extended_sa_rates_only:
  // OpenSM announces 40 Gb/s, the nearest rate older drivers know.
  testbed::SwitchGraphSpec hdr = ring;
  hdr.ca_link = {testbed::Width::k1x, testbed::Speed::kHdr};
  hdr.switch_link = {testbed::Width::k4x, testbed::Speed::kHdr};
  out.push_back({"ring6_minhop_original_rates", hdr, "minhop", true, true, 0, false,
                 "use_original_extended_sa_rates_only TRUE\n"});
  // torus-2QoS on a 3x3 torus: paths that cross a dateline get their own SL bit. With QoS off
  // it refuses to route and OpenSM's fallback engine (minhop) routes instead.
  const testbed::TorusRadix radix{3, 3};
  const testbed::SwitchGraphSpec torus = testbed::torus_spec(3, 3);
  out.push_back(
      {"torus3x3_torus2qos_qos", torus, "torus-2QoS", true, true, 0, true, {}, radix, 11});
  out.push_back(
      {"torus3x3_torus2qos_noqos", torus, "torus-2QoS", false, false, 0, false, {}, radix});
  // A mid-size fabric: 40 switches of a random graph, 500 sampled CA pairs, under the engines
  // that give paths SLs.
  for (const char* engine : {"lash", "dfsssp", "nue"}) {
    Case c{fmt::format("random40_{}_qos", engine), testbed::random_spec(40, 20, 5), engine};
    c.layered = true;
    c.sampled_pairs = 500;
    out.push_back(c);
  }
  // `file` routing on the ring, from UPDN's LFTs, whole and with node003 reachable only from its
  // own switch (not sm01's: rdma-qos-sad there reads its tables by directed route).
  for (bool holes : {false, true}) {
    Case c{holes ? "ring6_file_holes_qos" : "ring6_file_qos", ring, "file"};
    c.lfts_from = "updn";
    c.lft_holes = holes;
    c.hole = "node003";
    out.push_back(c);
  }
  return out;
}

// Fabrics of hundreds of switches (label soak, a test per shape and engine): QoS on with the
// policy, sampled pairs.
std::vector<Case> large_cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, testbed::SwitchGraphSpec>> shapes = {
      {"random150", testbed::random_spec(150, 75, 9)},
      {"dragonfly12x12", testbed::dragonfly_spec(12, 12)},
  };
  for (const auto& [shape, spec] : shapes) {
    for (const char* engine :
         {"lash", "dfsssp", "sssp", "nue", "updn", "dnup", "minhop", "dor", "ftree"}) {
      const std::string e = engine;
      Case c{fmt::format("{}_{}_qos", shape, engine), spec, engine};
      c.sampled_pairs = 400;
      // ftree finds no fat tree here, and LASH no layering of the random graph within its SLs:
      // min-hop routes.
      c.routed_by = e == "ftree" || (e == "lash" && shape == "random150") ? "minhop" : e;
      c.layered = c.routed_by == "dfsssp" || c.routed_by == "nue" || c.routed_by == "lash";
      out.push_back(c);
    }
  }
  // A two-level fat tree near ibsim's 2,048 nodes: 1,980 CAs, 32 a leaf, 4 spines.
  testbed::FatTreeSpec tree;
  tree.cas = 1980;
  tree.cas_per_leaf = 32;
  tree.spines = 4;
  for (const char* engine : {"lash", "dfsssp", "sssp", "updn", "minhop", "ftree"}) {
    Case c{fmt::format("tree1980_{}_qos", engine), {}, engine};
    c.sampled_pairs = 400;
    c.tree = tree;
    c.routed_by = engine;
    out.push_back(c);
  }
  return out;
}

// The whole matrix (label soak): every shape, every engine that runs on it, QoS on with and
// without a policy, QoS off, and LMC 1.
std::vector<Case> soak_cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, testbed::SwitchGraphSpec>> shapes = {
      {"ring8", testbed::ring_spec(8, 1)},          {"torus3x3", testbed::torus_spec(3, 3)},
      {"mesh3x3", testbed::mesh_spec(3, 3)},        {"dragonfly3x3", testbed::dragonfly_spec(3, 3)},
      {"random10", testbed::random_spec(10, 6, 7)},
  };
  for (const auto& [shape, spec] : shapes) {
    for (const char* engine :
         {"lash", "dfsssp", "sssp", "nue", "updn", "dnup", "minhop", "dor", "ftree"}) {
      out.push_back({fmt::format("{}_{}_qos", shape, engine), spec, engine, true, true});
      out.push_back({fmt::format("{}_{}_qos_nopolicy", shape, engine), spec, engine, true, false});
      out.push_back({fmt::format("{}_{}_noqos", shape, engine), spec, engine, false, false});
      out.push_back({fmt::format("{}_{}_qos_lmc1", shape, engine), spec, engine, true, true, 1});
    }
  }
  // torus-2QoS on the tori it is told about (a radix-4 dimension needs both seed directions),
  // with Bulk's SL in its upper QoS class.
  const std::vector<std::tuple<std::string, testbed::SwitchGraphSpec, testbed::TorusRadix>> tori = {
      {"torus3x3", testbed::torus_spec(3, 3), {3, 3, 1}},
      {"torus4x4", testbed::torus_spec(4, 4), {4, 4, 1}},
      {"torus3x3x3", testbed::torus3d_spec(3, 3, 3), {3, 3, 3}},
      {"mesh3x3", testbed::mesh_spec(3, 3), {3, 3, 1, true}},
      {"mesh4x4", testbed::mesh_spec(4, 4), {4, 4, 1, true}},
  };
  for (const auto& [shape, spec, radix] : tori) {
    const std::string engine = "torus-2QoS", name = shape + "_torus2qos";
    out.push_back({name + "_qos", spec, engine, true, true, 0, true, {}, radix, 11});
    out.push_back({name + "_qos_nopolicy", spec, engine, true, false, 0, true, {}, radix});
    out.push_back({name + "_noqos", spec, engine, false, false, 0, false, {}, radix});
    out.push_back({name + "_qos_lmc1", spec, engine, true, true, 1, true, {}, radix, 11});
  }
  // `file` routing on looped fabrics, from UPDN's and min-hop's LFTs, whole and with holes.
  for (const auto& [shape, spec] : {shapes[1], shapes[4]}) {
    for (const char* from : {"updn", "minhop"}) {
      for (int variant = 0; variant < 5; ++variant) {
        static constexpr const char* kSuffix[] = {"_qos", "_qos_nopolicy", "_noqos", "_qos_lmc1",
                                                  "_holes_qos"};
        Case c{fmt::format("{}_file_{}{}", shape, from, kSuffix[variant]), spec, "file"};
        c.policy = variant != 1 && variant != 2;
        c.qos = variant != 2;
        c.lmc = variant == 3 ? 1 : 0;
        c.lft_holes = variant == 4;
        c.lfts_from = from;
        out.push_back(c);
      }
    }
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Ci, RoutingDifferential, ::testing::ValuesIn(ci_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Soak, RoutingDifferential, ::testing::ValuesIn(soak_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Large, RoutingDifferential, ::testing::ValuesIn(large_cases()), case_name);

}  // namespace
}  // namespace rdmaqos::osmp
