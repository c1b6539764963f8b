// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The IPoIB broadcast groups OpenSM creates from its partitions configuration, and its
// PathRecord answer for a multicast DGID (see multicast.h). Observed on ibsim with OpenSM
// 3.3.23: one group per `ipoib` partition, MLIDs 0xC000 up in file order, mtu=/rate=/sl= of
// the partition (defaults 2048 and 10 Gb/s), packet life subnet_timeout, hop limit 0, and
// answers only to requests that name no source (no port has joined).
#include "rdma-qos/sa-responder/multicast.h"

#include <algorithm>

namespace rdmaqos::sad {
namespace {

constexpr uint8_t kDefaultMtu = 4;                                // 2048 bytes
constexpr uint8_t kDefaultRate = 3;                               // 10 Gb/s
constexpr uint64_t kIpv4BroadcastPrefix = 0xff12401b00000000ULL;  // ff12:401b:PKEY::
constexpr uint64_t kIpv4BroadcastGuid = 0xffffffffULL;            // ::ffff:ffff

}  // namespace

std::vector<MulticastGroup> ipoib_broadcast_groups(const std::vector<policy::Partition>& partitions,
                                                   uint8_t subnet_timeout) {
  std::vector<MulticastGroup> out;
  for (const policy::Partition& p : partitions) {
    if (!p.ipoib) continue;
    MulticastGroup g;
    g.pkey = static_cast<uint16_t>(p.pkey | 0x8000);
    g.mgid = sa::make_gid(kIpv4BroadcastPrefix | uint64_t{g.pkey} << 16, kIpv4BroadcastGuid);
    // Two partitions with one P_Key do not come from parse_partitions (it folds them); any
    // other caller's keep the first group, as OpenSM finds the MGID it made.
    if (find_group(out, g.mgid) != nullptr) continue;
    g.mlid = static_cast<uint16_t>(kFirstMulticastLid + out.size());
    g.sl = p.ipoib_group_sl ? *p.ipoib_group_sl : p.sl.value_or(0);
    g.mtu = p.mtu.value_or(kDefaultMtu);
    g.rate = p.rate.value_or(kDefaultRate);
    g.packet_life = subnet_timeout;
    out.push_back(g);
  }
  return out;
}

bool may_see_group(const std::vector<uint16_t>& pkeys, const MulticastGroup& group) {
  return std::any_of(pkeys.begin(), pkeys.end(),
                     [&group](uint16_t k) { return (k & 0x7FFF) == (group.pkey & 0x7FFF); });
}

const MulticastGroup* find_group(const std::vector<MulticastGroup>& groups, const sa::Gid& mgid) {
  for (const MulticastGroup& g : groups) {
    if (g.mgid == mgid) return &g;
  }
  return nullptr;
}

std::optional<sa::PathRecord> multicast_path(const MulticastGroup& group,
                                             const sa::PathRecord& request, uint64_t comp_mask,
                                             bool get) {
  namespace pr = sa::pr_mask;
  auto has = [comp_mask](uint64_t bit) { return (comp_mask & bit) != 0; };
  // The group's MLID, members (none known), PKey, SL, and its zero flow label, hop limit and
  // traffic class; MTU, rate and packet life are not checked.
  if (has(pr::kDlid) && request.dlid != group.mlid) return std::nullopt;
  if (has(pr::kSgid) || has(pr::kSlid)) return std::nullopt;
  if (has(pr::kPKey) && request.pkey != group.pkey) return std::nullopt;
  if (has(pr::kSl) && request.sl != group.sl) return std::nullopt;
  if (has(pr::kNumbPath) && !get && request.numb_path == 0) return std::nullopt;
  if (has(pr::kFlowLabel) && request.flow_label != 0) return std::nullopt;
  if (has(pr::kHopLimit) && request.hop_limit != 0) return std::nullopt;
  if (has(pr::kTClass) && request.tclass != 0) return std::nullopt;
  // The request's record with the group's values written over it.
  sa::PathRecord r = request;
  r.dgid = group.mgid;
  r.dlid = group.mlid;
  r.tclass = 0;
  r.reversible = false;
  r.numb_path = 1;
  r.pkey = group.pkey;
  r.mtu_selector = sa::Selector::kExactly;
  r.mtu = group.mtu;
  r.rate_selector = sa::Selector::kExactly;
  r.rate = group.rate;
  r.packet_life_selector = sa::Selector::kExactly;
  r.packet_life = group.packet_life;
  r.sl = group.sl;
  r.qos_class = 0;
  r.raw_traffic = false;
  r.flow_label = 0;
  r.hop_limit = 0;
  return r;
}

}  // namespace rdmaqos::sad
