// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMP payload decoders and encoders (IBA 14.2.5.6 PortInfo, 14.2.5.8 SLtoVLMappingTable,
// 14.2.5.9 VLArbitrationTable, 14.2.5.7 P_KeyTable). The bytes come from other nodes: every length
// and value is taken as it is, nothing indexes by a value read.
#include "rdma-qos/fabric/tables.h"

#include <algorithm>

namespace rdmaqos::fabric {

bool same_vlarb(const VlArbTable& a, const VlArbTable& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.vl == y.vl && x.weight == y.weight;
  });
}

int data_vls(uint8_t vl_code) {
  switch (vl_code) {
    case 1: return 1;
    case 2: return 2;
    case 3: return 4;
    case 4: return 8;
    case 5: return 15;
    default: return 0;
  }
}

std::optional<PortInfoFields> decode_port_info(std::span<const uint8_t> d) {
  if (d.size() < kSmpDataSize) return std::nullopt;
  PortInfoFields f;
  f.lid = static_cast<uint16_t>(d[16] << 8 | d[17]);
  f.capability_mask = static_cast<uint32_t>(d[20]) << 24 | static_cast<uint32_t>(d[21]) << 16 |
                      static_cast<uint32_t>(d[22]) << 8 | d[23];
  f.state = d[32] & 0xF;
  f.lmc = d[34] & 0x7;
  f.vl_cap = d[37] >> 4;
  f.vl_high_limit = d[38];
  f.vlarb_high_cap = d[39];
  f.vlarb_low_cap = d[40];
  f.oper_vls = d[43] >> 4;
  return f;
}

std::optional<Sl2Vl> decode_sl2vl(std::span<const uint8_t> d) {
  if (d.size() < kSmpDataSize) return std::nullopt;
  Sl2Vl t{};
  for (size_t sl = 0; sl < 16; ++sl) {
    const uint8_t byte = d[sl / 2];
    t[sl] = static_cast<uint8_t>(sl % 2 == 0 ? byte >> 4 : byte & 0xF);
  }
  return t;
}

std::optional<VlArbTable> decode_vlarb_block(std::span<const uint8_t> d) {
  if (d.size() < kSmpDataSize) return std::nullopt;
  VlArbTable t(kVlArbBlockEntries);
  for (size_t i = 0; i < kVlArbBlockEntries; ++i) {
    t[i].vl = d[2 * i] & 0xF;
    t[i].weight = d[2 * i + 1];
  }
  return t;
}

std::optional<std::vector<uint16_t>> decode_pkey_block(std::span<const uint8_t> d) {
  if (d.size() < kSmpDataSize) return std::nullopt;
  std::vector<uint16_t> keys;
  for (size_t i = 0; i < kPKeyBlockEntries; ++i) {
    const auto key = static_cast<uint16_t>((d[2 * i] << 8 | d[2 * i + 1]) & 0x7FFF);
    if (key != 0) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::array<uint8_t, kSmpDataSize> encode_sl2vl(const Sl2Vl& table) {
  std::array<uint8_t, kSmpDataSize> d{};
  for (size_t sl = 0; sl < 16; sl += 2)
    d[sl / 2] = static_cast<uint8_t>((table[sl] & 0xF) << 4 | (table[sl + 1] & 0xF));
  return d;
}

std::array<uint8_t, kSmpDataSize> encode_vlarb_block(const VlArbTable& table, size_t first) {
  std::array<uint8_t, kSmpDataSize> d{};
  for (size_t i = 0; i < kVlArbBlockEntries && first + i < table.size(); ++i) {
    d[2 * i] = table[first + i].vl & 0xF;
    d[2 * i + 1] = table[first + i].weight;
  }
  return d;
}

std::array<uint8_t, kSmpDataSize> port_info_with_high_limit(std::span<const uint8_t> current,
                                                            uint8_t high_limit) {
  std::array<uint8_t, kSmpDataSize> d{};
  std::copy_n(current.begin(), std::min(current.size(), d.size()), d.begin());
  d[32] &= 0xF0;  // PortState: no state change
  d[33] = 0;      // PortPhysicalState, LinkDownDefaultState: no change
  d[38] = high_limit;
  return d;
}

PortRef NodeTables::ref(const PortTables& port) const {
  // A switch is a partition member through its port 0 (the SA's membership is by port GUID,
  // which all of a switch's ports share).
  const PortTables* member = type == policy::NodeType::kSwitch ? find(0) : &port;
  return {guid,        port.guid, type,
          description, port.port, member != nullptr ? member->pkeys : std::vector<uint16_t>{}};
}

void link_peer_pkeys(FabricTables& fabric) {
  std::map<uint64_t, const NodeTables*> by_guid;
  for (const auto& n : fabric.nodes) by_guid[n.guid] = &n;
  for (auto& n : fabric.nodes) {
    for (auto& p : n.ports) {
      if (!p.peer) continue;
      auto it = by_guid.find(p.peer->node_guid);
      const PortTables* far = it != by_guid.end() ? it->second->find(p.peer->port) : nullptr;
      if (far != nullptr) p.peer->pkeys = it->second->ref(*far).pkeys;
    }
  }
}

const PortTables* NodeTables::find(uint8_t port) const {
  for (const auto& p : ports)
    if (p.port == port) return &p;
  return nullptr;
}

policy::PortClass port_class(policy::NodeType type, uint8_t port) {
  switch (type) {
    case policy::NodeType::kSwitch:
      return port == 0 ? policy::PortClass::kSwitchPort0 : policy::PortClass::kSwitchExternal;
    case policy::NodeType::kRouter: return policy::PortClass::kRouter;
    case policy::NodeType::kCa: break;
  }
  return policy::PortClass::kCa;
}

}  // namespace rdmaqos::fabric
