// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The authorization suite's probes (see authorization_probes.h).
#include "authorization_probes.h"

#include <fmt/format.h>

#include <tuple>
#include <utility>

#include "rdma-qos/testbed/raw_mad.h"

namespace rdmaqos::sad::authorization {
namespace {

using testbed::raw::Mad;

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

uint64_t get_be(const std::vector<uint8_t>& b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | (at + i < b.size() ? b[at + i] : 0);
  return v;
}

}  // namespace

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

}  // namespace rdmaqos::sad::authorization
