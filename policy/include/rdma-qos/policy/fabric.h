// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric a policy is resolved against, supplied by the caller (the SA from its subnet
// database, the CLI from a topology file, tests from their topology): nodes, ports and
// partition membership. Also the partitions.conf reader, since pkey and partition groups and
// the IPoIB rules resolve through the partitions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"

namespace rdmaqos::policy {

enum class NodeType : uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };

// The NodeTypeBit (policy.h) a node type sets in a port group's node-type mask.
uint8_t node_type_bit(NodeType type);

struct FabricNode {
  uint64_t node_guid = 0;
  NodeType type = NodeType::kCa;
  std::string description;  // NodeDescription
  int num_ports = 1;        // physical ports
  // (port number, port GUID): every port of a CA or router; port 0 only for a switch, whose
  // external ports share the switch's GUID.
  std::vector<std::pair<int, uint64_t>> port_guids;
};

struct PartitionMember {
  uint64_t port_guid = 0;
  bool full = true;
};

struct Partition {
  std::string name;
  uint16_t pkey = 0;  // 15 bits
  bool ipoib = false;
  std::optional<uint8_t> sl;
  std::vector<PartitionMember> members;
  SourceLocation location;
  // mtu= and rate= (IBA codes): they matter only to the partition's IPoIB broadcast group.
  std::optional<uint8_t> mtu;
  std::optional<uint8_t> rate;
  // The IPoIB group's SL when a later statement for this P_Key changed `sl` after the group was
  // made (the group keeps the SL it was made with); nullopt: `sl`.
  std::optional<uint8_t> ipoib_group_sl;

  int full_members() const;
};

struct Fabric {
  std::vector<FabricNode> nodes;
  uint64_t sm_port_guid = 0;  // node-type SELF
  std::vector<Partition> partitions;

  const FabricNode* node_of_port(uint64_t port_guid) const;
  const Partition* partition(uint16_t pkey) const;  // pkey & 0x7FFF
  const Partition* partition(std::string_view name) const;
};

// OpenSM's partition when no partitions file is given: "Default=0x7fff,ipoib : ALL=full;".
std::vector<Partition> default_partitions(const Fabric& fabric);

struct PartitionsResult {
  std::vector<Partition> partitions;
  Diagnostics diagnostics;
};

// Reads OpenSM's partitions.conf syntax: `Name=PKey[,ipoib][,sl=N][,defmember=full|limited|
// both] : member[=full|limited|both], ... ;` with members ALL, ALL_CAS, ALL_SWITCHES, SELF or
// port GUIDs, resolved against `fabric`. A statement for a P_Key an earlier one defined adds to
// that partition, as OpenSM does.
PartitionsResult parse_partitions(std::string_view text, const Fabric& fabric);

struct FabricResult {
  Fabric fabric;
  Diagnostics diagnostics;
};

// Reads a topology in the ibnetdiscover / ibsim net-file format ("Ca"/"Switch" headers with
// caguid=/switchguid= lines, "[port]" link lines). The first CA's first port is taken as the
// SM's port unless an "# sm" marker says otherwise.
FabricResult parse_net_file(std::string_view text);

}  // namespace rdmaqos::policy
