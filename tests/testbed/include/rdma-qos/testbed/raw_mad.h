// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SA MADs built byte by byte for sa-raw-mad, which sends the same bytes to OpenSM and to our
// SAs: the wire layout (IBA 15.2: common MAD header, RMPP header at 24, SA header at 36 with the
// component mask at 48, SA data at 56) written out independently of the code under test.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rdmaqos::testbed::raw {

inline constexpr size_t kData = 56;  // SA data in the MAD
inline constexpr uint64_t kLinkLocal = 0xfe80000000000000ULL;
inline constexpr uint8_t kGet = 0x01, kSet = 0x02, kGetTable = 0x12, kGetMulti = 0x14,
                         kDelete = 0x15;
inline constexpr uint16_t kClassPortInfo = 0x0001, kPathRecord = 0x0035, kMultiPathRecord = 0x003A;

// PathRecord field offsets in the SA data.
namespace pr {
inline constexpr size_t kServiceId = 0, kDgid = 8, kSgid = 24, kDlid = 40, kSlid = 42,
                        kHopFlowRaw = 44, kTClass = 48, kNumPath = 49, kPKey = 50, kQosSl = 52,
                        kMtu = 54, kRate = 55, kPktLife = 56;
}  // namespace pr
// PathRecord component-mask bits.
namespace prm {
inline constexpr uint64_t kServiceIdMsb = 1 << 0, kServiceIdLsb = 1 << 1, kDgid = 1 << 2,
                          kSgid = 1 << 3, kDlid = 1 << 4, kSlid = 1 << 5, kRawTraffic = 1 << 6,
                          kNumbPath = 1 << 12, kPKey = 1 << 13, kQosClass = 1 << 14, kSl = 1 << 15,
                          kMtuSel = 1 << 16, kMtu = 1 << 17, kRateSel = 1 << 18, kRate = 1 << 19,
                          kPktLifeSel = 1 << 20, kPktLife = 1 << 21;
inline constexpr uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
}  // namespace prm
// MultiPathRecord component-mask bits.
namespace mprm {
inline constexpr uint64_t kRawTraffic = 1 << 0, kNumbPath = 1 << 6, kPKey = 1 << 7,
                          kQosClass = 1 << 8, kSl = 1 << 9, kRateSel = 1 << 12, kRate = 1 << 13,
                          kServiceIdMsb = 1 << 16, kSgidCount = 1 << 19, kDgidCount = 1 << 20,
                          kServiceIdLsb = 1 << 21;
}  // namespace mprm

// A MAD as sa-raw-mad sends it (256 bytes, hex), built field by field in wire order.
struct Mad {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(256, 0);

  void put(size_t at, uint64_t value, size_t width) {
    for (size_t i = 0; i < width; ++i) {
      bytes[at + i] = static_cast<uint8_t>(value >> (8 * (width - 1 - i)));
    }
  }
  void gid(size_t at, uint64_t prefix, uint64_t guid) {
    put(at, prefix, 8);
    put(at + 8, guid, 8);
  }
  std::string hex() const {
    std::string s;
    for (uint8_t b : bytes) s += fmt::format("{:02x}", b);
    return s;
  }
};

// An SA MAD header: base version 1, SA class, class version 2, `method`, a fresh low TID half
// (the umad layer owns the high one), `attr`, `sm_key` and `comp_mask`.
inline Mad sa_mad(uint8_t method, uint16_t attr, uint64_t comp_mask, uint64_t sm_key = 0) {
  static uint32_t tid = 0x5A000000;
  Mad m;
  m.put(0, 0x01030200 | method, 4);
  m.put(12, ++tid, 4);
  m.put(16, attr, 2);
  m.put(36, sm_key, 8);
  m.put(48, comp_mask, 8);
  return m;
}

inline constexpr uint16_t kMcMemberRecord = 0x0038;

// An MCMemberRecord join (SubnAdmSet, full member) of port `port_guid` to the existing group
// `mgid_prefix`:`mgid_id`, naming MGID, PortGID and JoinState only.
inline Mad join_group(uint64_t mgid_prefix, uint64_t mgid_id, uint64_t port_guid) {
  Mad m = sa_mad(kSet, kMcMemberRecord, (1u << 0) | (1u << 1) | (1u << 16));
  m.gid(kData + 0, mgid_prefix, mgid_id);
  m.gid(kData + 16, kLinkLocal, port_guid);
  m.put(kData + 48, 0x01, 1);  // JoinState: full member
  return m;
}

inline constexpr uint16_t kGuidInfoRecord = 0x0030;

// A GUIDInfoRecord SubnAdmSet that gives the port at `lid` the alias GUID `alias` at index
// `index` (1..7) of block 0, as an SR-IOV virtual function's driver registers its GUID.
inline Mad set_alias_guid(uint16_t lid, int index, uint64_t alias) {
  Mad m = sa_mad(kSet, kGuidInfoRecord, (1u << 0) | (1u << 1) | (1u << (4 + index)));
  m.put(kData + 0, lid, 2);  // LID; BlockNum 0
  m.put(kData + 8 + 8 * static_cast<size_t>(index), alias, 8);
  return m;
}

// The RMPP header of a one-segment GetMulti whose data holds `gids` GIDs.
inline void one_rmpp_segment(Mad& m, size_t gids) {
  m.put(24, 1, 1);     // RMPP version
  m.put(25, 1, 1);     // DATA
  m.put(26, 0x07, 1);  // active, first, last
  m.put(28, 1, 4);     // segment 1
  m.put(32, 20 + 24 + 16 * gids, 4);
}

}  // namespace rdmaqos::testbed::raw
