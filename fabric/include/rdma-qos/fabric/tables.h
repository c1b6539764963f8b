// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a fabric's ports hold for QoS (SL2VL, VL arbitration, the PortInfo fields that bound
// them), as read over SMPs or as intended, and the decoders of the SMP payloads they come in.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/policy/opensm_conf.h"

namespace rdmaqos::fabric {

using Sl2Vl = std::array<uint8_t, 16>;  // VL by SL; VL 15 drops the SL
using VlArbTable = std::vector<policy::VlArbEntry>;

// SMP attribute IDs (IBA 14.2.5).
inline constexpr uint16_t kAttrPortInfo = 0x0015;
inline constexpr uint16_t kAttrSl2Vl = 0x0017;
inline constexpr uint16_t kAttrVlArb = 0x0018;
inline constexpr uint16_t kAttrPKeyTable = 0x0016;
inline constexpr size_t kSmpDataSize = 64;
inline constexpr size_t kVlArbBlockEntries = 32;
inline constexpr size_t kPKeyBlockEntries = 32;
// PortInfo CapabilityMask: IsSLMappingSupported.
inline constexpr uint32_t kCapSlMapping = 1u << 6;

// The PortInfo fields QoS depends on.
struct PortInfoFields {
  uint16_t lid = 0;
  uint8_t lmc = 0;
  uint32_t capability_mask = 0;
  uint8_t state = 0;           // 1 down, 2 init, 3 armed, 4 active
  uint8_t vl_cap = 0;          // 1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14
  uint8_t vl_high_limit = 0;   // 4 KB units
  uint8_t vlarb_high_cap = 0;  // entries
  uint8_t vlarb_low_cap = 0;
  uint8_t oper_vls = 0;  // same encoding as vl_cap
};

// VlArbEntry has no operator== of its own (policy/ owns it).
bool same_vlarb(const VlArbTable& a, const VlArbTable& b);

// Data VLs an encoded VLCap/OperationalVLs allows (1, 2, 4, 8, 15; 0 for a bad code).
int data_vls(uint8_t vl_code);

// Decoders of SMP data (64 bytes, from another node: untrusted). A span shorter than 64 bytes
// gives nullopt; every bit pattern of a full span decodes.
std::optional<PortInfoFields> decode_port_info(std::span<const uint8_t> data);
std::optional<Sl2Vl> decode_sl2vl(std::span<const uint8_t> data);
std::optional<VlArbTable> decode_vlarb_block(std::span<const uint8_t> data);
// A P_Key block as partition membership: the P_Keys without their membership bit (a limited
// member is a member, as for the SA's pkey groups), the invalid P_Key 0 left out.
std::optional<std::vector<uint16_t>> decode_pkey_block(std::span<const uint8_t> data);
// Encoders for Set: the same layouts.
std::array<uint8_t, kSmpDataSize> encode_sl2vl(const Sl2Vl& table);
// Entries [first, first + 32) of `table`, missing ones as (VL 0, weight 0).
std::array<uint8_t, kSmpDataSize> encode_vlarb_block(const VlArbTable& table, size_t first);
// A PortInfo for Set that changes only VLHighLimit: `current` with the fields a Set would
// change left at "no change" (PortState, PortPhysicalState, LinkDownDefaultState 0).
std::array<uint8_t, kSmpDataSize> port_info_with_high_limit(std::span<const uint8_t> current,
                                                            uint8_t high_limit);

// A port as a policy's port groups see it.
struct PortRef {
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;  // a switch: the switch's GUID for every port
  policy::NodeType type = policy::NodeType::kCa;
  std::string description;  // NodeDescription
  uint8_t port = 0;
  // The partitions the port is a member of (P_Keys & 0x7FFF, sorted, unique); a switch: its
  // port 0's, for every port. Empty when the P_Key tables were not read.
  std::vector<uint16_t> pkeys{};
};

struct PortTables {
  uint8_t port = 0;
  uint64_t guid = 0;  // a switch: the switch's GUID for every port
  PortInfoFields info;
  std::array<uint8_t, kSmpDataSize> raw_port_info{};  // kept for a high-limit Set
  std::optional<PortRef> peer;                        // the linked port, when active
  bool sl_mapping = false;         // IsSLMappingSupported (a switch: as its port 0 says)
  std::map<uint8_t, Sl2Vl> sl2vl;  // by input port (end ports: 0)
  std::optional<VlArbTable> vlarb_high, vlarb_low;  // as long as the port's capability
  std::vector<uint16_t> pkeys{};                    // as in PortRef; read only when asked
};

struct NodeTables {
  uint64_t guid = 0;
  policy::NodeType type = policy::NodeType::kCa;
  std::string description;
  int num_ports = 0;
  bool enhanced_port0 = false;    // a switch whose port 0 has SL2VL and VLArb tables
  uint16_t partition_cap = 0;     // NodeInfo PartitionCap: P_Key entries of end ports, port 0
  std::vector<PortTables> ports;  // ports read, ascending; a switch's port 0 first when present

  PortRef ref(const PortTables& port) const;
  const PortTables* find(uint8_t port) const;
};

struct FabricTables {
  std::vector<NodeTables> nodes;
  uint64_t sm_port_guid = 0;        // the port the reads ran from (node-type SELF)
  std::vector<std::string> unread;  // tables or ports no answer came for
};

// Gives every port's `peer` the P_Keys of the port it links to (read after the topology).
void link_peer_pkeys(FabricTables& fabric);

// A port's class in opensm.conf: CA, router, switch port 0 or switch external port.
policy::PortClass port_class(policy::NodeType type, uint8_t port);

}  // namespace rdmaqos::fabric
