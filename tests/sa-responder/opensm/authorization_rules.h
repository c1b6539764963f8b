// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The authorization suite's fabric, partitions and policy, and the rules (written from OpenSM's
// behaviour and Documentation/opensm-semantics.md, "Authorization") that say which record, if
// any, a requester may obtain for a pair. Shared by the suite's probes and its test file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::sad::authorization {

// The fabric: the test bed's small fat tree.
const testbed::Topology& tree();
uint64_t port_guid(const std::string& node);
uint16_t lid(const std::string& node);
std::string guid_text(const std::string& node);

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
const std::map<std::string, std::vector<Membership>>& members();
// The partitions file.
std::string partitions();
std::optional<Membership> holds(const std::string& node, uint16_t pkey);
// osm_physp_share_this_pkey: both hold it, at least one as a full member.
bool share_this(const std::string& a, const std::string& b, uint16_t pkey);
// osm_physp_share_pkey: the same port, or some P_Key shared as above.
bool share(const std::string& a, const std::string& b);
// The requester, the source and the destination pairwise (pr_rcv_get_port_pair_paths).
bool requester_may(const std::string& r, const std::string& s, const std::string& d);

// ---------------------------------------------------------------------------------------------
// The policy: levels that name P_Keys and SLs, reached by what a request names (QoS class,
// Service-ID, P_Key) or by its destination.

struct Level {
  const char* name;
  uint8_t sl;
  std::optional<uint16_t> pkey;  // the level's only P_Key
};
inline const Level kDefaultLevel{"DEFAULT", 0, std::nullopt};
inline const Level kRedLevel{"RED", 2, kRed};
inline const Level kBlueLevel{"BLUE", 1, kBlue};
inline const Level kStorageLevel{"STOR", 3, std::nullopt};
constexpr uint64_t kBlueServiceId = 0x1060CBC;

// The policy file.
std::string policy();

// ---------------------------------------------------------------------------------------------
// Requests and the rules.

// What a request names, PathRecord component-mask style (a MultiPathRecord's are converted).
struct Ask {
  std::optional<uint16_t> pkey = std::nullopt;
  std::optional<uint8_t> sl = std::nullopt;
  std::optional<uint8_t> qos_class = std::nullopt;
  std::optional<uint64_t> service_id = std::nullopt;
  bool raw = false;
};

// The level a request from `s` to `d` gets (first matching rule, else DEFAULT).
const Level& level_of(const Ask& a, const std::string& d);

// The P_Key and SL of the one record the rules allow for a pair, or none.
struct Expected {
  uint16_t pkey;
  uint8_t sl;
};
std::optional<Expected> expected(const std::string& r, const std::string& s, const std::string& d,
                                 const Ask& a, bool check_requester = true);

}  // namespace rdmaqos::sad::authorization
