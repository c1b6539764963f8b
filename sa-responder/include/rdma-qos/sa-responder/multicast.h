// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The multicast groups OpenSM 3.3.23 creates by itself from its partitions configuration, and
// the PathRecord it answers for a multicast DGID (pr_process_multicast). OpenSM answers such a
// PathRecord from its group database; this SA serves no MCMemberRecord, so it knows only the
// groups the partitions imply, with no members.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sad {

struct MulticastGroup {
  sa::Gid mgid{};
  uint16_t mlid = 0;
  uint16_t pkey = 0;  // full member bit set
  uint8_t sl = 0;
  uint8_t mtu = 0;          // IBA MTU code
  uint8_t rate = 0;         // IBA rate code
  uint8_t packet_life = 0;  // subnet_timeout when the group was created
  friend bool operator==(const MulticastGroup&, const MulticastGroup&) = default;
};

inline constexpr uint16_t kFirstMulticastLid = 0xC000;

// The IPoIB broadcast group of every partition flagged `ipoib`, in the order the partitions
// configuration defines them (OpenSM's MLIDs count up from 0xC000 in that order):
// MGID ff12:401b:PKEY::ffff:ffff (PKEY with the full member bit), the partition's SL,
// mtu= (default 4: 2048) and rate= (default 3: 10 Gb/s), packet life `subnet_timeout`.
// Without a partitions file, give policy::default_partitions (Default=0x7fff,ipoib : ALL=full).
std::vector<MulticastGroup> ipoib_broadcast_groups(const std::vector<policy::Partition>& partitions,
                                                   uint8_t subnet_timeout);

// The group a multicast DGID names, if OpenSM would have created it.
const MulticastGroup* find_group(const std::vector<MulticastGroup>& groups, const sa::Gid& mgid);

// Whether a requester holding `pkeys` (its P_Key table, membership bits included) is shown
// `group`: only when it holds the group's P_Key, full or limited, as OpenSM's own MCMemberRecord
// queries show a group (OpenSM answers a multicast PathRecord to anyone: a deliberate
// difference).
bool may_see_group(const std::vector<uint16_t>& pkeys, const MulticastGroup& group);

// pr_match_mgrp_attributes and pr_process_multicast: the record for `request` (its component
// mask `comp_mask`) to `group`, or nullopt when a component disqualifies it. A named source
// (SGID or SLID) must be a member, and no port is known to be one. `get` is SubnAdmGet (which
// ignores NumbPath).
std::optional<sa::PathRecord> multicast_path(const MulticastGroup& group,
                                             const sa::PathRecord& request, uint64_t comp_mask,
                                             bool get);

}  // namespace rdmaqos::sad
