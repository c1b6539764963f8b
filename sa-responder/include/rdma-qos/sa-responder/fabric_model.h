// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the SA knows about the subnet: nodes, ports (LID/LMC, MTU, active rate, PKey and SL2VL
// tables), links and switch forwarding tables, and the path walk over them. Pure data, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-responder/multicast.h"

namespace rdmaqos::sad {

using Sl2Vl = std::array<uint8_t, 16>;  // SL -> VL

// Rates (IBA rate codes, enum ibv_rate) compared by effective data rate, as OpenSM orders them:
// 12x SDR (30G) is slower than 1x EDR (25G), 12x QDR (120G) slower than 4x EDR (100G).
// Negative, zero or positive like strcmp; unknown codes order below every known one.
int compare_rates(uint8_t a, uint8_t b);
// The next slower rate in that order; nullopt below 2.5G or for an unknown code.
std::optional<uint8_t> slower_rate(uint8_t rate);
bool valid_rate(uint8_t rate);  // 2..22: the rates a request may name (OpenSM 3.3.23's range)

// PortInfo CapabilityMask bits the rate computation reads.
constexpr uint32_t kCapHasExtendedSpeeds = 1u << 14;  // IsExtendedSpeedsSupported
constexpr uint32_t kCapHasCapabilityMask2 = 1u << 15;
// CapabilityMask2 bits.
constexpr uint16_t kCap2Width2x = 0x0010;   // IsLinkWidth2xSupported
constexpr uint16_t kCap2SpeedHdr = 0x0020;  // IsLinkSpeedHDRSupported
constexpr uint16_t kCap2SpeedNdr = 0x0400;  // IsLinkSpeedNDRSupported

// A port's rate from PortInfo's LinkWidthActive (1 = 1x, 16 = 2x, 2 = 4x, 4 = 8x, 8 = 12x),
// LinkSpeedActive (1 SDR, 2 DDR, 4 QDR) and LinkSpeedExtActive (1 FDR, 2 EDR, 4 HDR, 8 NDR),
// computed as OpenSM does: LinkSpeedExtActive counts only when `extended` (the
// IsExtendedSpeedsSupported bit of the CapabilityMask that governs the port: a CA port's own,
// a switch's port 0 for all its ports) and when it names a speed; else LinkSpeedActive.
// A combination IBA does not define gives known = false and the rate OpenSM falls back to (an
// unknown width counts as 1x, an unknown speed as 2.5G): the caller must report it.
// NDR follows OpenSM after 3.3.23 (which reads NDR links as their LinkSpeedActive).
struct PortRate {
  uint8_t rate = 2;
  bool known = false;
};
PortRate port_rate(uint8_t width_active, uint8_t speed_active, uint8_t speed_ext_active,
                   bool extended);
// The same with `extended` set whenever LinkSpeedExtActive is non-zero; nullopt when the
// combination is unknown.
std::optional<uint8_t> rate_from_link(uint8_t width_active, uint8_t speed_active,
                                      uint8_t speed_ext_active);
// The rate a PathRecord carries for a path rate that only 2x widths or HDR/NDR speeds give
// (28, 50, 400, 600, 800 and 1200 Gb/s) when an end port does not announce support for them in
// its CapabilityMask2: OpenSM lowers it (to 25/20, 40, 300 or 600 Gb/s) for the source port
// and, on a reversible path, for the destination port.
uint8_t announced_rate(uint8_t rate, uint32_t capability_mask, uint16_t capability_mask2);
// OpenSM's use_original_extended_sa_rates_only (for hosts whose drivers do not know the rate
// codes 19-22): a record's rate is cut to the original extended rates, up to 12x EDR
// (28G -> 25G, 50G -> 40G, 400G and 600G -> 300G) instead of announced_rate's per-port rules.
uint8_t original_extended_rate(uint8_t rate);

struct PortModel {
  bool present = false;  // a port that exists (CA ports, switch port 0 and external ports)
  uint64_t guid = 0;     // CA and router ports: the port GUID; switch port 0: the node GUID
  uint16_t lid = 0;      // endpoints only (CA ports, switch port 0)
  uint8_t lmc = 0;
  uint8_t mtu_cap = 4;  // IBA MTU code
  uint8_t rate = 3;     // IBA rate code of the active link (port_rate)
  // Endpoints (CA ports, switch port 0): PortInfo CapabilityMask and CapabilityMask2, which
  // decide the rate a path record announces (announced_rate).
  uint32_t capability_mask = kCapHasExtendedSpeeds | kCapHasCapabilityMask2;
  uint16_t capability_mask2 = kCap2Width2x | kCap2SpeedHdr | kCap2SpeedNdr;
  // PKey table, membership bit included; zero entries are empty slots.
  std::vector<uint16_t> pkeys;
  // CA ports: one table (index 0). Switch external ports: indexed by input port.
  std::vector<Sl2Vl> sl2vl;
  int peer_node = -1;  // index in FabricModel::nodes; -1: not linked
  uint8_t peer_port = 0;
};

struct NodeModel {
  uint64_t guid = 0;
  policy::NodeType type = policy::NodeType::kCa;
  std::string description;
  std::vector<PortModel> ports;  // indexed by port number; a switch's index 0 is port 0
  std::vector<uint8_t> lft;      // switches: output port per DLID; 0xFF or past the end: none
};

// A port the SA answers about: a CA/router port, or port 0 of a switch.
struct Endpoint {
  int node = -1;
  uint8_t port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// The walk of one direction of a path.
struct PathWalk {
  uint8_t mtu = 0;         // minimum MTUCap over every port on the path
  uint8_t rate = 0;        // minimum rate (compare_rates) over every port on the path
  uint16_t valid_sls = 0;  // bit n: no SL2VL table on the path maps SL n to VL 15
  int hops = 0;            // switches traversed
  int links = 0;           // links crossed: OpenSM's hop count (MultiPathRecord's APM choice)
};

// What the subnet manager's routing engine decides beyond the forwarding tables, where the model
// knows it: the OpenSM plugin reads it from OpenSM; rdma-qos-sad's discovery cannot see it.
struct RoutingFacts {
  std::string engine;           // OpenSM's name for it ("minhop", "lash"); empty: unknown
  bool assigns_sl = false;      // it gives each path the SL of its layer (OpenSM's path_sl)
  bool programs_sl2vl = false;  // it writes SL2VL or VLArb tables itself (torus-2QoS)
};

class FabricModel {
 public:
  std::vector<NodeModel> nodes;
  RoutingFacts routing;
  // The SM's live multicast groups where the model knows them (the OpenSM plugin reads them
  // from OpenSM); nullopt: unknown (rdma-qos-sad synthesises the partitions' IPoIB groups).
  std::optional<std::vector<MulticastGroup>> multicast_groups;
  // Active CA ports with a LID whose P_Key table is empty (the SM has not read or set it yet):
  // OpenSM counts such a port as sharing a partition with every port, which the model's P_Key
  // rules do not. Counted by the OpenSM plugin, which then leaves path queries to OpenSM.
  size_t endpoints_without_pkeys = 0;
  // OpenSM's use_original_extended_sa_rates_only: records carry original_extended_rate.
  bool original_extended_rates_only = false;
  // Port GUIDs that have alias GUIDs besides their own (SR-IOV virtual functions register them
  // with SubnAdmSet(GUIDInfoRecord)), sorted: OpenSM may then put an alias in a record's SGID or
  // DGID even for a query by LID. Known to the OpenSM plugin only.
  std::vector<uint64_t> ports_with_aliases;
  // Port GUIDs of CA and router ports the SM holds that are not Active, or whose link's switch
  // side is not Active (Init, Armed, or Down before the SM's next sweep drops them), sorted.
  // OpenSM's path handlers never look at a port's state and answer for such a port as for an
  // Active one, while the model gives it no P_Keys and no link. Known to the OpenSM plugin only.
  std::vector<uint64_t> inactive_endpoints;
  // Switch ports linked to another switch that the SM holds not Active: any path may cross one.
  // Counted by the OpenSM plugin only.
  size_t inactive_switch_ports = 0;
  uint64_t subnet_prefix = 0xFE80000000000000ULL;
  uint8_t subnet_timeout = 18;  // OpenSM's default: the packet life without a level value
  uint64_t sm_port_guid = 0;

  // Builds the LID and GUID indexes; call after filling `nodes`.
  void index();

  const PortModel& port(Endpoint e) const { return nodes.at(e.node).ports.at(e.port); }
  // The endpoint whose LID range (base LID, 2^LMC LIDs) holds `lid`.
  std::optional<Endpoint> by_lid(uint16_t lid) const;
  std::optional<Endpoint> by_guid(uint64_t port_guid) const;
  std::vector<Endpoint> endpoints() const;
  // The endpoints in the order OpenSM walks its port GUID map: by the network-order GUID read
  // as a host integer (byte-swapped order on little-endian hosts). Built by index().
  const std::vector<Endpoint>& endpoints_in_guid_map_order() const { return guid_map_order_; }
  // The subnet's LMC (OpenSM's lmc option, given to every CA port): the largest LMC of a
  // CA or router port. Built by index().
  uint8_t subnet_lmc() const { return subnet_lmc_; }

  // Follows the switches' LFTs from `source` to `dlid`; nullopt when a table has no entry, a
  // link is missing or the walk loops. The DLID must belong to an endpoint.
  std::optional<PathWalk> walk(Endpoint source, uint16_t dlid) const;

  // The nodes and port GUIDs a policy resolves its port groups against (no partitions).
  policy::Fabric policy_fabric() const;

 private:
  std::vector<std::pair<uint16_t, Endpoint>> lids_;  // base LID -> endpoint, sorted
  // Every LID up to the highest in use -> its entry in lids_ (-1: none): by_lid in O(1), since
  // every path of an answer looks up its DLID at least twice.
  std::vector<int32_t> lid_entry_;
  std::vector<std::pair<uint64_t, Endpoint>> guids_;  // sorted
  std::vector<Endpoint> guid_map_order_;
  uint8_t subnet_lmc_ = 0;
};

// PKeys of a port that match `pkey` in the low 15 bits.
std::optional<uint16_t> find_pkey(const PortModel& port, uint16_t pkey);
// Both ports hold the base PKey and at least one of them as a full member.
bool share_this_pkey(const PortModel& a, const PortModel& b, uint16_t pkey);
// Some PKey is shared as above.
bool share_any_pkey(const PortModel& a, const PortModel& b);

}  // namespace rdmaqos::sad
