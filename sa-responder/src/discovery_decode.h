// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The payloads of the SMPs discovery reads (64 bytes each: NodeInfo, NodeDescription,
// SwitchInfo, PortInfo, P_KeyTable, SLtoVLMappingTable, LinearForwardingTable), decoded into the
// fields the fabric model keeps. Pure functions over bytes, shared by the full and the
// incremental discovery and fuzzed on their own (tests/sa-responder/fuzz/smp_decode_fuzz.cpp).
// Internal to rdma-qos-sad's discovery library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::sad {

constexpr size_t kSmpDataBytes = 64;
using SmpBytes = std::array<uint8_t, kSmpDataBytes>;

constexpr uint8_t kNodeTypeCa = 1;
constexpr uint8_t kNodeTypeSwitch = 2;
constexpr uint8_t kNodeTypeRouter = 3;
constexpr uint8_t kPortStateActive = 4;
constexpr uint8_t kPhysStateLinkUp = 5;

struct NodeInfoFields {
  uint8_t type = 0;
  uint8_t ports = 0;  // NumPorts: external ports (a switch's port 0 not counted)
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;
  uint16_t partition_cap = 0;
  uint8_t local_port = 0;  // the port the SMP came in at
};
NodeInfoFields decode_node_info(const SmpBytes& b);

// Up to the first NUL, as libibnetdisc keeps it.
std::string decode_node_description(const SmpBytes& b);

struct PortInfoFields {
  uint64_t m_key = 0;  // 0 in the answer of a level-1 port to a Get without its M_Key
  uint8_t m_key_protect_bits = 0;
  uint64_t gid_prefix = 0;
  uint16_t lid = 0;
  uint32_t capability_mask = 0;
  uint16_t capability_mask2 = 0;
  uint8_t local_port = 0;
  uint8_t width_active = 0;
  uint8_t state = 0;       // 1 Down .. 4 Active
  uint8_t phys_state = 0;  // 5 LinkUp
  uint8_t lmc = 0;
  uint8_t speed_active = 0;
  uint8_t speed_ext_active = 0;
  uint8_t mtu_cap = 0;
  bool active() const { return state == kPortStateActive; }
  bool link_up() const { return phys_state == kPhysStateLinkUp; }
};
PortInfoFields decode_port_info(const SmpBytes& b);

// SwitchInfo's LinearFDBTop: the highest LID the switch's linear forwarding table holds.
uint16_t decode_lft_top(const SmpBytes& switch_info);
// LFT blocks a switch with this LinearFDBTop holds (64 LIDs each).
inline unsigned lft_blocks(uint16_t top) {
  return top / 64u + 1;
}
// P_KeyTable blocks (32 entries each) a port has: from NodeInfo's PartitionCap, at least one.
inline unsigned pkey_blocks(uint16_t partition_cap) {
  return partition_cap == 0 ? 1 : (partition_cap + 31u) / 32;
}

// SL -> VL of one SLtoVLMappingTable (two SLs a byte, high nibble first).
Sl2Vl decode_sl2vl(const SmpBytes& b);
// The non-empty entries of one P_KeyTable block (low 15 bits not zero), in table order.
void append_pkeys(const SmpBytes& b, std::vector<uint16_t>& out);
// LIDs `first`.. of one LinearForwardingTable block into `lft` (up to its size).
void put_lft_block(const SmpBytes& b, unsigned block, std::vector<uint8_t>& lft);

// MTU, rate and capability masks from a PortInfo. `governing_capmask`: the CapabilityMask whose
// IsExtendedSpeedsSupported bit decides whether LinkSpeedExtActive counts (a switch's port 0
// for every port of the switch, as OpenSM reads it). A width/speed combination IBA does not
// define on a `linked` port is returned as a warning naming `where`, with the rate OpenSM would
// use.
std::optional<std::string> fill_port_info(PortModel& pm, const PortInfoFields& info,
                                          uint32_t governing_capmask, bool linked,
                                          const std::string& where);

}  // namespace rdmaqos::sad
