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

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::sad::authorization {
namespace {

using testbed::IbFabric;
using testbed::IbFabricOptions;

const testbed::Topology& tree() {
  static const testbed::Topology t = testbed::make_fat_tree({});
  return t;
}
uint64_t port_guid(const std::string& node) {
  return tree().node(node).port_guid;
}
uint16_t lid(const std::string& node) {
  return tree().node(node).lid;
}
std::string guid_text(const std::string& node) {
  return fmt::format("{:#018x}", port_guid(node));
}

// ---------------------------------------------------------------------------------------------
// The partitions. OpenSM makes every port a limited member of the Default partition before it
// reads the file (and the SM's port a full one), so a port the file does not make a full member
// of Default shares it with full members only.

constexpr uint16_t kDefault = 0x7FFF, kRed = 0x30, kBlue = 0x40;

struct Membership {
  uint16_t pkey;  // 15 bits
  bool full;
};

// What OpenSM programs into each CA's P_Key table.
const std::map<std::string, std::vector<Membership>>& members() {
  static const std::map<std::string, std::vector<Membership>> m = {
      {"sm01", {{kDefault, true}}},
      {"node001", {{kDefault, true}, {kRed, true}}},
      {"node002", {{kDefault, true}, {kBlue, true}}},
      {"node003", {{kDefault, true}}},
      {"node004", {{kDefault, false}, {kRed, true}}},
      {"node005", {{kDefault, false}, {kRed, false}}},  // limited everywhere
      {"node006", {{kDefault, false}, {kRed, false}, {kBlue, true}}},
      {"node007", {{kDefault, false}, {kBlue, false}}},  // limited everywhere
      {"node008", {{kDefault, false}, {kBlue, false}}},  // limited everywhere
  };
  return m;
}

std::string partitions() {
  return fmt::format(
      "Default=0x7fff, ipoib : {}=full, {}=full, {}=full, {}=full;\n"
      "Red=0x30, ipoib, sl=1 : {}=full, {}=full, {}=limited, {}=limited;\n"
      "Blue=0x40, sl=3 : {}=full, {}=full, {}=limited, {}=limited;\n",
      guid_text("sm01"), guid_text("node001"), guid_text("node002"), guid_text("node003"),
      guid_text("node001"), guid_text("node004"), guid_text("node005"), guid_text("node006"),
      guid_text("node002"), guid_text("node006"), guid_text("node007"), guid_text("node008"));
}

std::optional<Membership> holds(const std::string& node, uint16_t pkey) {
  for (const Membership& m : members().at(node))
    if (m.pkey == (pkey & 0x7FFF)) return m;
  return std::nullopt;
}

// osm_physp_share_this_pkey: both hold it, at least one as a full member.
bool share_this(const std::string& a, const std::string& b, uint16_t pkey) {
  auto x = holds(a, pkey), y = holds(b, pkey);
  return x && y && (x->full || y->full);
}

// osm_physp_share_pkey: the same port, or some P_Key shared as above.
bool share(const std::string& a, const std::string& b) {
  if (a == b) return true;
  for (const Membership& m : members().at(a))
    if (share_this(a, b, m.pkey)) return true;
  return false;
}

// The requester, the source and the destination pairwise (pr_rcv_get_port_pair_paths).
bool requester_may(const std::string& r, const std::string& s, const std::string& d) {
  return share(r, s) && share(r, d) && share(s, d);
}

// ---------------------------------------------------------------------------------------------
// The policy: levels that name P_Keys and SLs, reached by what a request names (QoS class,
// Service-ID, P_Key) or by its destination.

struct Level {
  const char* name;
  uint8_t sl;
  std::optional<uint16_t> pkey;  // the level's only P_Key
};
const Level kDefaultLevel{"DEFAULT", 0, std::nullopt};
const Level kRedLevel{"RED", 2, kRed};
const Level kBlueLevel{"BLUE", 1, kBlue};
const Level kStorageLevel{"STOR", 3, std::nullopt};
constexpr uint64_t kBlueServiceId = 0x1060CBC;

std::string policy() {
  return fmt::format(R"(port-groups
  port-group
    name: Storage
    port-guid: {}
  end-port-group
end-port-groups

qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: RED
    sl: 2
    pkey: 0x30
  end-qos-level
  qos-level
    name: BLUE
    sl: 1
    pkey: 0x40
  end-qos-level
  qos-level
    name: STOR
    sl: 3
  end-qos-level
end-qos-levels

qos-match-rules
  qos-match-rule
    qos-class: 4
    qos-level-name: RED
  end-qos-match-rule
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: BLUE
  end-qos-match-rule
  qos-match-rule
    pkey: 0x40
    qos-level-name: BLUE
  end-qos-match-rule
  qos-match-rule
    destination: Storage
    qos-level-name: STOR
  end-qos-match-rule
end-qos-match-rules
)",
                     guid_text("node003"));
}

// ---------------------------------------------------------------------------------------------
// Requests.

// What a request names, PathRecord component-mask style (a MultiPathRecord's are converted).
struct Ask {
  std::optional<uint16_t> pkey = std::nullopt;
  std::optional<uint8_t> sl = std::nullopt;
  std::optional<uint8_t> qos_class = std::nullopt;
  std::optional<uint64_t> service_id = std::nullopt;
  bool raw = false;
};

// The level a request from `s` to `d` gets (first matching rule, else DEFAULT).
const Level& level_of(const Ask& a, const std::string& d) {
  if (a.qos_class == 4) return kRedLevel;
  if (a.service_id == kBlueServiceId) return kBlueLevel;
  if (a.pkey && (*a.pkey & 0x7FFF) == kBlue) return kBlueLevel;
  if (d == "node003") return kStorageLevel;
  return kDefaultLevel;
}

// The P_Key and SL of the one record the rules allow for a pair, or none.
struct Expected {
  uint16_t pkey;
  uint8_t sl;
};
// OpenSM walks P_Key maps keyed by the network-order value: on a little-endian host, the
// byte-swapped order.
uint16_t swapped(uint16_t k) {
  return static_cast<uint16_t>((k & 0xFF) << 8 | k >> 8);
}
std::optional<Expected> expected(const std::string& r, const std::string& s, const std::string& d,
                                 const Ask& a, bool check_requester = true) {
  if (check_requester && !requester_may(r, s, d)) return std::nullopt;
  const Level& level = level_of(a, d);
  uint16_t pkey = 0;
  if (a.raw) {
    pkey = 0;  // any shared P_Key or none; the record carries 0
  } else if (a.pkey) {
    if (!share_this(s, d, *a.pkey)) return std::nullopt;
    if (level.pkey && *level.pkey != (*a.pkey & 0x7FFF)) return std::nullopt;
    pkey = *a.pkey;  // echoed as sent
  } else if (level.pkey) {
    if (!share_this(s, d, *level.pkey)) return std::nullopt;
    pkey = *level.pkey;
  } else {
    std::optional<Membership> best;
    for (const Membership& m : members().at(s))
      if (share_this(s, d, m.pkey) && (!best || swapped(m.pkey) < swapped(best->pkey))) best = m;
    if (!best) return std::nullopt;
    pkey = static_cast<uint16_t>(best->pkey | (best->full ? 0x8000 : 0));
  }
  if (a.sl && *a.sl != level.sl) return std::nullopt;
  return Expected{pkey, level.sl};
}

// A MAD as sa-raw-mad sends it, built field by field in wire order.
struct Mad {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(256, 0);
  void put(size_t at, uint64_t value, size_t width) {
    for (size_t i = 0; i < width; ++i)
      bytes[at + i] = static_cast<uint8_t>(value >> (8 * (width - 1 - i)));
  }
  void gid(size_t at, uint64_t prefix, uint64_t guid) {
    put(at, prefix, 8);
    put(at + 8, guid, 8);
  }
  std::string hex() const {
    std::string out;
    for (uint8_t b : bytes) out += fmt::format("{:02x}", b);
    return out;
  }
};

constexpr size_t kData = 56;  // SA data in the MAD
constexpr uint64_t kLinkLocal = 0xfe80000000000000ULL;
constexpr uint8_t kGet = 0x01, kGetTable = 0x12, kGetMulti = 0x14;
constexpr uint16_t kPathRecord = 0x0035, kMultiPathRecord = 0x003A;
namespace prm {
constexpr uint64_t kServiceId = 3, kDgid = 1 << 2, kSgid = 1 << 3, kDlid = 1 << 4, kSlid = 1 << 5,
                   kRawTraffic = 1 << 6, kPKey = 1 << 13, kQosClass = 1 << 14, kSl = 1 << 15;
}
namespace mprm {
constexpr uint64_t kRawTraffic = 1 << 0, kNumbPath = 1 << 6, kPKey = 1 << 7, kQosClass = 1 << 8,
                   kSl = 1 << 9, kServiceIdMsb = 1 << 16, kSgidCount = 1 << 19,
                   kDgidCount = 1 << 20, kServiceIdLsb = 1 << 21;
}

Mad sa_mad(uint8_t method, uint16_t attr, uint64_t comp_mask, uint64_t sm_key) {
  static uint32_t tid = 0x7A000000;
  Mad m;
  m.put(0, 0x01030200 | method, 4);  // base version 1, SA class, class version 2, method
  m.put(12, ++tid, 4);
  m.put(16, attr, 2);
  m.put(36, sm_key, 8);
  m.put(48, comp_mask, 8);
  return m;
}

enum class Shape { kLids, kGids, kTable, kMultiPath };

// A PathRecord (Get or GetTable) or MultiPathRecord (GetMulti, one SGID and one DGID) from `s`
// to `d`, naming what `a` names.
Mad path_mad(Shape shape, const std::string& s, const std::string& d, const Ask& a,
             uint64_t sm_key = 0) {
  if (shape == Shape::kMultiPath) {
    uint64_t mask = mprm::kSgidCount | mprm::kDgidCount;
    if (a.raw) mask |= mprm::kRawTraffic;
    if (a.pkey) mask |= mprm::kPKey;
    if (a.qos_class) mask |= mprm::kQosClass;
    if (a.sl) mask |= mprm::kSl;
    if (a.service_id) mask |= mprm::kServiceIdMsb | mprm::kServiceIdLsb;
    Mad m = sa_mad(kGetMulti, kMultiPathRecord, mask, sm_key);
    m.put(24, 1, 1);     // RMPP version
    m.put(25, 1, 1);     // DATA
    m.put(26, 0x07, 1);  // active, first, last
    m.put(28, 1, 4);     // segment 1
    m.put(32, 20 + 24 + 32, 4);
    if (a.raw) m.put(kData + 0, 1u << 31, 4);
    if (a.pkey) m.put(kData + 6, *a.pkey, 2);
    m.put(kData + 8, uint64_t{a.qos_class.value_or(0)} << 4 | a.sl.value_or(0), 2);
    if (a.service_id) {
      m.put(kData + 13, *a.service_id >> 56, 1);
      m.put(kData + 17, *a.service_id & 0x00FFFFFFFFFFFFFFULL, 7);
    }
    m.put(kData + 15, 1, 1);  // SGIDCount
    m.put(kData + 16, 1, 1);  // DGIDCount
    m.gid(kData + 24, kLinkLocal, port_guid(s));
    m.gid(kData + 40, kLinkLocal, port_guid(d));
    return m;
  }
  uint64_t mask = shape == Shape::kGids ? prm::kSgid | prm::kDgid : prm::kSlid | prm::kDlid;
  if (a.raw) mask |= prm::kRawTraffic;
  if (a.pkey) mask |= prm::kPKey;
  if (a.qos_class) mask |= prm::kQosClass;
  if (a.sl) mask |= prm::kSl;
  if (a.service_id) mask |= prm::kServiceId;
  Mad m = sa_mad(shape == Shape::kTable ? kGetTable : kGet, kPathRecord, mask, sm_key);
  if (a.service_id) m.put(kData + 0, *a.service_id, 8);
  if (shape == Shape::kGids) {
    m.gid(kData + 8, kLinkLocal, port_guid(d));
    m.gid(kData + 24, kLinkLocal, port_guid(s));
  } else {
    m.put(kData + 40, lid(d), 2);
    m.put(kData + 42, lid(s), 2);
  }
  if (a.raw) m.put(kData + 44, 1u << 31, 4);
  if (a.pkey) m.put(kData + 50, *a.pkey, 2);
  m.put(kData + 52, uint64_t{a.qos_class.value_or(0)} << 4 | a.sl.value_or(0), 2);
  return m;
}

// An alternate-path MultiPathRecord: two SGIDs, two DGIDs, NumbPath 2.
Mad apm_mad(const std::vector<std::string>& sources, const std::vector<std::string>& dests) {
  Mad m =
      sa_mad(kGetMulti, kMultiPathRecord, mprm::kSgidCount | mprm::kDgidCount | mprm::kNumbPath, 0);
  m.put(24, 1, 1);
  m.put(25, 1, 1);
  m.put(26, 0x07, 1);
  m.put(28, 1, 4);
  m.put(32, 20 + 24 + 64, 4);
  m.put(kData + 5, 2, 1);  // NumbPath
  m.put(kData + 15, 2, 1);
  m.put(kData + 16, 2, 1);
  size_t at = kData + 24;
  for (const auto& list : {sources, dests}) {
    for (const std::string& n : list) {
      m.gid(at, kLinkLocal, port_guid(n));
      at += 16;
    }
  }
  return m;
}

// The IPoIB broadcast group of a partition: ff12:401b:PKEY::ffff:ffff, PKEY with the full bit.
Mad multicast_mad(uint16_t pkey) {
  Mad m = sa_mad(kGet, kPathRecord, prm::kDgid, 0);
  m.gid(kData + 8, 0xff12401b00000000ULL | uint64_t{static_cast<uint16_t>(pkey | 0x8000)} << 16,
        0xffffffffULL);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Probes and answers.

enum class Kind {
  kPair,        // one pair, judged by expected()
  kSmKeyRight,  // as kPair, with the SA's own SM_Key: the same answer as without
  kSmKeyWrong,  // a wrong SM_Key: no answer at all
  kApm,         // alternate paths: each record's pair judged; OpenSM checks no requester
  kMulticast,   // a partition's broadcast group: only to a requester that holds its P_Key
};

struct Probe {
  Kind kind = Kind::kPair;
  std::string requester, source, destination;
  Ask ask;
  Shape shape = Shape::kLids;
  std::string hex;
  std::string label;
  uint16_t group_pkey = 0;  // kMulticast
};

struct Record {
  uint64_t sguid = 0, dguid = 0;
  uint16_t pkey = 0;
  uint8_t sl = 0;
};

struct Answer {
  nlohmann::json json;  // sa-raw-mad's line
  bool answered = false;
  std::string status;
  std::vector<Record> records;
};

uint64_t get_be(const std::vector<uint8_t>& b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | (at + i < b.size() ? b[at + i] : 0);
  return v;
}

Answer parse_answer(const nlohmann::json& j) {
  Answer a;
  a.json = j;
  a.answered = j.is_object() && j.value("answered", false);
  if (!a.answered) return a;
  a.status = j.value("status", std::string());
  const std::string hex = j.value("data", std::string());
  std::vector<uint8_t> data;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    data.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  if (a.status != "0x0000") return a;
  // Records of 64 bytes; the answer is cut to one MAD (no RMPP under umad2sim) and the trailing
  // zero bytes are cut: a record whose first 56 bytes came is read.
  for (size_t at = 0; at + 8 < data.size(); at += 64) {
    Record r;
    r.dguid = get_be(data, at + 16, 8);
    r.sguid = get_be(data, at + 32, 8);
    r.pkey = static_cast<uint16_t>(get_be(data, at + 50, 2));
    r.sl = static_cast<uint8_t>(get_be(data, at + 52, 2) & 0xF);
    if (r.sguid == 0 && r.dguid == 0) break;
    a.records.push_back(r);
  }
  return a;
}

const std::vector<std::string>& cas() {
  static const std::vector<std::string> v = {"sm01",    "node001", "node002", "node003", "node004",
                                             "node005", "node006", "node007", "node008"};
  return v;
}

std::string node_of(uint64_t guid) {
  for (const std::string& n : cas())
    if (port_guid(n) == guid) return n;
  return fmt::format("{:#x}", guid);
}

std::vector<Probe> make_probes() {
  std::vector<Probe> out;
  auto add = [&](Kind kind, const std::string& r, const std::string& s, const std::string& d,
                 Shape shape, Ask ask, uint64_t sm_key, std::string label) {
    Probe p;
    p.kind = kind;
    p.requester = r;
    p.source = s;
    p.destination = d;
    p.ask = ask;
    p.shape = shape;
    p.hex = path_mad(shape, s, d, ask, sm_key).hex();
    p.label = std::move(label);
    out.push_back(std::move(p));
  };
  // Every requester, every pair, plainly and forced.
  struct Variant {
    Shape shape;
    Ask ask;
    const char* label;
  };
  const std::vector<Variant> variants = {
      {Shape::kLids, {}, "Get"},
      {Shape::kTable, {}, "GetTable"},
      {Shape::kGids, {}, "Get by GIDs"},
      {Shape::kMultiPath, {}, "GetMulti"},
      {Shape::kLids, {.pkey = 0x7FFF}, "P_Key 0x7fff"},
      {Shape::kLids, {.pkey = 0xFFFF}, "P_Key 0xffff"},
      {Shape::kLids, {.pkey = 0x0030}, "P_Key 0x0030"},
      {Shape::kLids, {.pkey = 0x8030}, "P_Key 0x8030"},
      {Shape::kTable, {.pkey = 0x8030}, "GetTable P_Key 0x8030"},
      {Shape::kLids, {.pkey = 0x0040}, "P_Key 0x0040"},
      {Shape::kLids, {.pkey = 0x8040}, "P_Key 0x8040"},
      {Shape::kMultiPath, {.pkey = 0x8030}, "GetMulti P_Key 0x8030"},
      {Shape::kLids, {.sl = 2}, "SL 2"},
      {Shape::kLids, {.sl = 1}, "SL 1"},
      {Shape::kLids, {.qos_class = 4}, "QoS class 4"},
      {Shape::kLids, {.pkey = 0x8040, .qos_class = 4}, "QoS class 4, P_Key 0x8040"},
      {Shape::kLids, {.sl = 0, .qos_class = 4}, "QoS class 4, SL 0"},
      {Shape::kMultiPath, {.qos_class = 4}, "GetMulti QoS class 4"},
      {Shape::kLids, {.service_id = kBlueServiceId}, "Service-ID of BLUE"},
      {Shape::kMultiPath, {.service_id = kBlueServiceId}, "GetMulti Service-ID of BLUE"},
      {Shape::kLids, {.raw = true}, "raw traffic"},
      {Shape::kLids, {.pkey = 0x8030, .raw = true}, "raw traffic, P_Key 0x8030"},
  };
  for (const std::string& r : cas())
    for (const std::string& s : cas())
      for (const std::string& d : cas())
        for (const Variant& v : variants) add(Kind::kPair, r, s, d, v.shape, v.ask, 0, v.label);
  // The SA's own SM_Key (OpenSM's default sa_key, 1) unlocks nothing: every requester, every
  // pair, plain Get.
  for (const std::string& r : cas())
    for (const std::string& s : cas())
      for (const std::string& d : cas())
        add(Kind::kSmKeyRight, r, s, d, Shape::kLids, {}, 1, "SM_Key 1");
  // Alternate paths: shapes whose pairs the requester is denied in part or whole.
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> apm = {
      {{"node005", "node006"}, {"node007", "node008"}},  // no pair shares a partition
      {{"node001", "node004"}, {"node005", "node006"}},  // Red, limited destinations
      {{"node001", "node002"}, {"node003", "sm01"}},     // full members of Default
      {{"node006", "node002"}, {"node007", "node008"}},  // Blue
      {{"node004", "node001"}, {"node007", "node003"}},
  };
  for (const std::string& r : cas()) {
    for (const auto& [srcs, dsts] : apm) {
      Probe p;
      p.kind = Kind::kApm;
      p.requester = r;
      p.shape = Shape::kMultiPath;
      p.hex = apm_mad(srcs, dsts).hex();
      p.label = fmt::format("APM {},{} -> {},{}", srcs[0], srcs[1], dsts[0], dsts[1]);
      out.push_back(std::move(p));
    }
    // Red's IPoIB broadcast group (Default's is every port's).
    Probe m;
    m.kind = Kind::kMulticast;
    m.requester = r;
    m.hex = multicast_mad(kRed).hex();
    m.label = "Red's broadcast group";
    m.group_pkey = kRed;
    out.push_back(std::move(m));
  }
  return out;
}

// Wrong SM_Keys: no answer (each waits out sa-raw-mad's timeout, so a few only).
std::vector<Probe> make_wrong_key_probes() {
  std::vector<Probe> out;
  for (const auto& [r, s, d] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"node001", "node001", "node002"}, {"node005", "node005", "node001"}}) {
    for (uint64_t key : {uint64_t{2}, uint64_t{0x8000000000000000ULL}}) {
      Probe p;
      p.kind = Kind::kSmKeyWrong;
      p.requester = r;
      p.source = s;
      p.destination = d;
      p.hex = path_mad(Shape::kLids, s, d, {}, key).hex();
      p.label = fmt::format("SM_Key {:#x}", key);
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::string describe(const Probe& p) {
  return fmt::format("{} asks {} -> {}: {}", p.requester, p.source, p.destination, p.label);
}

// ---------------------------------------------------------------------------------------------

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
