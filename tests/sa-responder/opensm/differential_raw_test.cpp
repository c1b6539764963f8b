// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad against OpenSM (see differential_fixture.h) on requests saquery cannot build,
// sent as the same MAD bytes to both (sa-raw-mad at node001): half a Service-ID, invalid rate
// and MTU values, selectors without their values, SGID/SLID disagreements, raw traffic,
// MultiPathRecords without RMPP, without GID counts or with more GIDs than fit, unknown
// methods and attributes, and PathRecords whose DGID is a multicast group.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "differential_fixture.h"
#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::sad::differential {
namespace {

// SA MAD layout (IBA 15.2): common MAD header, RMPP header at 24, SA header at 36 (component
// mask at 48), SA data at 56.
constexpr size_t kData = 56;
// PathRecord fields, as offsets into the SA data.
namespace pr {
constexpr size_t kServiceId = 0, kDgid = 8, kSgid = 24, kDlid = 40, kSlid = 42, kHopFlowRaw = 44,
                 kTClass = 48, kNumPath = 49, kPKey = 50, kQosSl = 52, kMtu = 54, kRate = 55,
                 kPktLife = 56;
}  // namespace pr
// PathRecord component mask bits.
namespace prm {
constexpr uint64_t kServiceIdMsb = 1 << 0, kServiceIdLsb = 1 << 1, kDgid = 1 << 2, kSgid = 1 << 3,
                   kDlid = 1 << 4, kSlid = 1 << 5, kRawTraffic = 1 << 6, kNumbPath = 1 << 12,
                   kPKey = 1 << 13, kQosClass = 1 << 14, kSl = 1 << 15, kMtuSel = 1 << 16,
                   kMtu = 1 << 17, kRateSel = 1 << 18, kRate = 1 << 19, kPktLifeSel = 1 << 20,
                   kPktLife = 1 << 21;
constexpr uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
}  // namespace prm
// MultiPathRecord component mask bits.
namespace mprm {
constexpr uint64_t kNumbPath = 1 << 6, kRateSel = 1 << 12, kRate = 1 << 13, kServiceIdMsb = 1 << 16,
                   kSgidCount = 1 << 19, kDgidCount = 1 << 20, kServiceIdLsb = 1 << 21;
}  // namespace mprm

constexpr uint8_t kGet = 0x01, kSet = 0x02, kGetTable = 0x12, kGetMulti = 0x14, kDelete = 0x15;
constexpr uint16_t kClassPortInfo = 0x0001, kPathRecord = 0x0035, kMultiPathRecord = 0x003A;

Mad sa_mad(uint8_t method, uint16_t attr, uint64_t comp_mask) {
  static uint32_t tid = 0x5A000000;
  Mad m;
  m.put(0, 1, 1);  // base version
  m.put(1, 0x03, 1);
  m.put(2, 2, 1);  // SA class version
  m.put(3, method, 1);
  m.put(12, ++tid, 4);  // the low half of the TID (the umad layer owns the high one)
  m.put(16, attr, 2);
  m.put(48, comp_mask, 8);
  return m;
}

constexpr uint64_t kLinkLocal = 0xfe80000000000000ULL;
// The Default partition's IPoIB broadcast group, ff12:401b:ffff::ffff:ffff (its high half).
constexpr uint64_t kIpv4BroadcastPrefix = 0xff12401bffff0000ULL;
uint64_t port_guid(const std::string& node) {
  return tree().node(node).port_guid;
}
uint16_t lid(const std::string& node) {
  return tree().node(node).lid;
}

// A PathRecord request from node001 to node002 by LIDs, plus `extra` components.
Mad path(uint8_t method, uint64_t extra, const std::string& src = "node001",
         const std::string& dst = "node002") {
  Mad m = sa_mad(method, kPathRecord, prm::kSlid | prm::kDlid | extra);
  m.put(kData + pr::kSlid, lid(src), 2);
  m.put(kData + pr::kDlid, lid(dst), 2);
  return m;
}

// A MultiPathRecord GetMulti with RMPP active (one segment) and the given GIDs.
Mad multipath(uint64_t comp_mask, const std::vector<std::string>& sources,
              const std::vector<std::string>& destinations, bool rmpp = true) {
  Mad m = sa_mad(kGetMulti, kMultiPathRecord, comp_mask);
  if (rmpp) {
    m.put(24, 1, 1);     // RMPP version
    m.put(25, 1, 1);     // DATA
    m.put(26, 0x07, 1);  // active, first, last
    m.put(28, 1, 4);     // segment 1
    m.put(32, 20 + 24 + 16 * (sources.size() + destinations.size()), 4);
  }
  m.put(kData + 15, sources.size(), 1);
  m.put(kData + 16, destinations.size(), 1);
  size_t at = kData + 24;
  for (const auto& list : {sources, destinations}) {
    for (const std::string& node : list) {
      if (at + 16 > m.bytes.size()) break;  // more GIDs announced than fit
      m.gid(at, kLinkLocal, port_guid(node));
      at += 16;
    }
  }
  return m;
}

std::vector<Query> raw_queries() {
  std::vector<Mad> mads;
  // Baselines: a Get and a GetTable that both answer.
  mads.push_back(path(kGet, 0));
  mads.push_back(path(kGetTable, 0));
  // Neither end named: every destination, every source for each (pr_rcv_process_world); the
  // Get answers the first path found, the GetTable's first records fill the one MAD.
  for (uint8_t method : {kGet, kGetTable}) mads.push_back(sa_mad(method, kPathRecord, 0));
  // Half a Service-ID, either half, Get and GetTable.
  for (uint64_t half : {prm::kServiceIdMsb, prm::kServiceIdLsb}) {
    for (uint8_t method : {kGet, kGetTable}) {
      Mad m = path(method, half);
      m.put(kData + pr::kServiceId, 0x1060CBC, 8);
      mads.push_back(m);
    }
  }
  // Rate and MTU values with and without their selector bits (value | selector << 6).
  for (uint8_t rate : {0, 1, 2, 11, 22, 23, 63}) {
    for (uint64_t bits : {prm::kRate | prm::kRateSel, prm::kRate, prm::kRateSel}) {
      Mad m = path(kGet, bits);
      m.put(kData + pr::kRate, 0x80 | rate, 1);
      mads.push_back(m);
    }
  }
  for (uint8_t mtu : {0, 1, 5, 6, 7}) {
    for (uint64_t bits : {prm::kMtu | prm::kMtuSel, prm::kMtu, prm::kMtuSel}) {
      Mad m = path(kGet, bits);
      m.put(kData + pr::kMtu, 0x80 | mtu, 1);
      mads.push_back(m);
    }
  }
  // Selector 3 (largest / smallest available) with odd values, and "less than 0".
  for (uint8_t value : {0x00, 0x01, 0x3F}) {
    Mad m = path(kGet, prm::kMtu | prm::kMtuSel | prm::kRate | prm::kRateSel | prm::kPktLife |
                           prm::kPktLifeSel);
    m.put(kData + pr::kMtu, 0xC0 | value, 1);
    m.put(kData + pr::kRate, 0xC0 | value, 1);
    m.put(kData + pr::kPktLife, 0xC0 | value, 1);
    mads.push_back(m);
  }
  for (uint8_t life : {0x40, 0x41, 0x7F, 0x3F, 0x00}) {
    Mad m = path(kGet, prm::kPktLife | prm::kPktLifeSel);
    m.put(kData + pr::kPktLife, life, 1);
    mads.push_back(m);
  }
  // SGID and SLID (or DGID and DLID) naming different ports, or the same one.
  for (const auto& [gid_node, lid_node] : std::vector<std::pair<std::string, std::string>>{
           {"node001", "node002"}, {"node001", "node001"}, {"node003", "node001"}}) {
    for (uint8_t method : {kGet, kGetTable}) {
      Mad s = sa_mad(method, kPathRecord, prm::kSgid | prm::kSlid | prm::kDlid);
      s.gid(kData + pr::kSgid, kLinkLocal, port_guid(gid_node));
      s.put(kData + pr::kSlid, lid(lid_node), 2);
      s.put(kData + pr::kDlid, lid("node004"), 2);
      mads.push_back(s);
      Mad d = sa_mad(method, kPathRecord, prm::kDgid | prm::kDlid | prm::kSlid);
      d.gid(kData + pr::kDgid, kLinkLocal, port_guid(gid_node));
      d.put(kData + pr::kDlid, lid(lid_node), 2);
      d.put(kData + pr::kSlid, lid("node004"), 2);
      mads.push_back(d);
    }
  }
  // Raw traffic: PKey 0 in the answer.
  {
    Mad m = path(kGet, prm::kRawTraffic);
    m.put(kData + pr::kHopFlowRaw, 0x80000000, 4);
    mads.push_back(m);
    Mad n = path(kGet, prm::kRawTraffic | prm::kPKey);
    n.put(kData + pr::kHopFlowRaw, 0x80000000, 4);
    n.put(kData + pr::kPKey, 0x1234, 2);
    mads.push_back(n);
  }
  // Fields echoed or not: TClass, QoS class with SL, NumbPath 0, a SubnAdmGet with no
  // component at all (the first path in GUID order).
  {
    Mad m = path(kGetTable, prm::kNumbPath);
    m.put(kData + pr::kNumPath, 0, 1);
    mads.push_back(m);
    Mad c = path(kGet, prm::kQosClass | prm::kSl);
    c.put(kData + pr::kQosSl, 7 << 4 | 0, 2);
    mads.push_back(c);
    Mad t = path(kGet, 1 << 10);
    t.put(kData + pr::kTClass, 0x44, 1);
    mads.push_back(t);
    mads.push_back(sa_mad(kGet, kPathRecord, 0));
  }
  // Methods and attributes: ClassPortInfo GetTable, MultiPathRecord Get without and with
  // RMPP, another class version.
  mads.push_back(sa_mad(kGetTable, kClassPortInfo, 0));
  mads.push_back(sa_mad(kGet, kMultiPathRecord, mprm::kSgidCount | mprm::kDgidCount));
  {
    Mad g = multipath(mprm::kSgidCount | mprm::kDgidCount, {"node001"}, {"node002"});
    g.put(3, kGet, 1);
    mads.push_back(g);
    Mad v = path(kGet, 0);
    v.put(2, 1, 1);
    mads.push_back(v);
  }
  // MultiPathRecord: a baseline, without RMPP, without either GID count bit, half a
  // Service-ID, an invalid rate, no source, more GIDs than fit in a MAD (the counts are
  // clamped to 11, sources first).
  const uint64_t counts = mprm::kSgidCount | mprm::kDgidCount;
  mads.push_back(multipath(counts, {"node001"}, {"node002", "node003"}));
  mads.push_back(multipath(counts, {"node001"}, {"node002"}, false));
  mads.push_back(multipath(mprm::kSgidCount, {"node001"}, {"node002"}));
  mads.push_back(multipath(mprm::kDgidCount, {"node001"}, {"node002"}));
  mads.push_back(multipath(counts | mprm::kServiceIdMsb, {"node001"}, {"node002"}));
  mads.push_back(multipath(counts | mprm::kServiceIdLsb, {"node001"}, {"node002"}));
  {
    Mad m = multipath(counts | mprm::kRate | mprm::kRateSel, {"node001"}, {"node002"});
    m.put(kData + 11, 0x81, 1);
    mads.push_back(m);
  }
  mads.push_back(multipath(counts, {}, {"node002"}));
  mads.push_back(multipath(counts, {"node001"}, {}));
  const std::vector<std::string> six = {"node001", "node002", "node003",
                                        "node004", "node005", "node006"};
  mads.push_back(multipath(counts, six, six));
  {
    Mad m = multipath(counts | mprm::kNumbPath, six, {"node007", "node008"});
    m.put(kData + 5, 2, 1);
    mads.push_back(m);
    // Twelve sources announced: only eleven fit, and no destination is left.
    Mad n = multipath(counts, {"node001"}, {"node002"});
    n.put(kData + 15, 12, 1);
    mads.push_back(n);
  }
  // Multicast DGIDs: the IPoIB broadcast group OpenSM creates for the Default partition
  // (ff12:401b:ffff::ffff:ffff), alone and with components that must match the group, and
  // groups that do not exist.
  auto mcast = [&](uint8_t method, uint64_t extra, uint64_t prefix = kIpv4BroadcastPrefix,
                   uint64_t id = 0x00000000ffffffffULL) {
    Mad m = sa_mad(method, kPathRecord, prm::kDgid | extra);
    m.gid(kData + pr::kDgid, prefix, id);
    return m;
  };
  mads.push_back(mcast(kGet, 0));
  mads.push_back(mcast(kGetTable, 0));
  mads.push_back(mcast(kGet, 0, 0xff12401b80010000ULL));
  mads.push_back(mcast(kGet, 0, 0xff12601bffff0000ULL, 1));
  mads.push_back(mcast(kGet, 0, kIpv4BroadcastPrefix, 0x00000000fffffffeULL));
  {
    Mad s = mcast(kGet, prm::kSlid);
    s.put(kData + pr::kSlid, lid("node001"), 2);
    mads.push_back(s);
    Mad p = mcast(kGet, prm::kPKey);
    p.put(kData + pr::kPKey, 0xffff, 2);
    mads.push_back(p);
    Mad q = mcast(kGet, prm::kPKey);
    q.put(kData + pr::kPKey, 0x7fff, 2);
    mads.push_back(q);
    Mad sl = mcast(kGet, prm::kSl);
    sl.put(kData + pr::kQosSl, 1, 2);
    mads.push_back(sl);
    Mad dl = mcast(kGet, prm::kDlid);
    dl.put(kData + pr::kDlid, 0xC000, 2);
    mads.push_back(dl);
    Mad sid = mcast(kGet, prm::kServiceId | prm::kMtu | prm::kMtuSel);
    sid.put(kData + pr::kServiceId, 0x1060CBC, 8);
    sid.put(kData + pr::kMtu, 0x85, 1);
    mads.push_back(sid);
  }

  std::vector<Query> out;
  for (const Mad& m : mads) out.push_back({"node001", {m.hex()}, false, true});
  // Deliberate differences (rdma-qos-sad(8)): OpenSM sends nothing for a method or attribute
  // it does not serve; rdma-qos-sad answers "unsupported method" (0x0008) or "unsupported
  // method/attribute" (0x000C).
  const std::vector<std::pair<Mad, std::string>> unsupported = {
      {path(kSet, 0), "0x000c"}, {path(kDelete, 0), "0x000c"},        {path(0x05, 0), "0x0008"},
      {path(0x13, 0), "0x0008"}, {sa_mad(kGet, 0x7777, 0), "0x000c"},
  };
  for (const auto& [m, status] : unsupported) {
    out.push_back({"node001", {m.hex()}, false, true, status});
  }
  return out;
}

class SadRawMadDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() { start({kPolicy, "", raw_queries}); }
};

TEST_F(SadRawMadDifferential, EveryAnswerEqualsOpenSms) {
  compare_all(10, 20);
}

// AttributeOffset is compared with the rest of the answer; this pins down that sa-raw-mad
// really reads it (it once read the reserved bytes after it, zero from both SAs, so a wrong
// offset passed): a table of PathRecords says 8 (64-byte records, in 8-byte words).
TEST_F(SadRawMadDifferential, TableAnswersGiveTheAttributeOffsetOfAPathRecord) {
  ASSERT_NE(ours_, nullptr);
  int checked = 0;
  for (size_t i = 0; i < queries_->size(); ++i) {
    for (const Outcome* o : {&(*opensm_)[i], &(*ours_)[i]}) {
      const nlohmann::json& j = o->json;
      if (!j.is_object() || !j.value("answered", false)) continue;
      const std::string method = j.value("method", std::string());
      if ((method != "0x92" && method != "0x94") || j.value("status", std::string()) != "0x0000" ||
          j.value("data", std::string()).empty()) {
        continue;
      }
      SCOPED_TRACE(describe((*queries_)[i]));
      EXPECT_EQ(j.value("attr_offset", -1), 8) << o->output;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

TEST_F(SadRawMadDifferential, UnsupportedMethodsGetAStatusWhereOpenSmIsSilent) {
  ASSERT_NE(ours_, nullptr);
  int checked = 0;
  for (size_t i = 0; i < queries_->size(); ++i) {
    const Query& q = (*queries_)[i];
    if (q.deliberate.empty()) continue;
    SCOPED_TRACE(describe(q));
    EXPECT_EQ((*opensm_)[i].json, nlohmann::json({{"answered", false}})) << (*opensm_)[i].output;
#ifdef RDMA_QOS_DIFFERENTIAL_PLUGIN
    // Inside OpenSM, its SA MAD controller drops these before any handler: silent as OpenSM.
    EXPECT_EQ((*ours_)[i].json, nlohmann::json({{"answered", false}})) << (*ours_)[i].output;
#else
    EXPECT_EQ((*ours_)[i].json.value("status", std::string()), q.deliberate) << (*ours_)[i].output;
#endif
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

}  // namespace
}  // namespace rdmaqos::sad::differential
