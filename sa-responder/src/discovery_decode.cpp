// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMP payload decoders (see discovery_decode.h), through libibmad's field tables.
#include "discovery_decode.h"

#include <infiniband/mad.h>

#include <fmt/format.h>

#include <cstring>

namespace rdmaqos::sad {
namespace {

// libibmad's getters take a non-const buffer and only read it.
uint32_t field(const SmpBytes& b, enum MAD_FIELDS f) {
  return mad_get_field(const_cast<uint8_t*>(b.data()), 0, f);
}
uint64_t field64(const SmpBytes& b, enum MAD_FIELDS f) {
  return mad_get_field64(const_cast<uint8_t*>(b.data()), 0, f);
}

}  // namespace

NodeInfoFields decode_node_info(const SmpBytes& b) {
  NodeInfoFields n;
  n.type = static_cast<uint8_t>(field(b, IB_NODE_TYPE_F));
  n.ports = static_cast<uint8_t>(field(b, IB_NODE_NPORTS_F));
  n.node_guid = field64(b, IB_NODE_GUID_F);
  n.port_guid = field64(b, IB_NODE_PORT_GUID_F);
  n.partition_cap = static_cast<uint16_t>(field(b, IB_NODE_PARTITION_CAP_F));
  n.local_port = static_cast<uint8_t>(field(b, IB_NODE_LOCAL_PORT_F));
  return n;
}

std::string decode_node_description(const SmpBytes& b) {
  const auto* text = reinterpret_cast<const char*>(b.data());
  return std::string(text, strnlen(text, b.size()));
}

PortInfoFields decode_port_info(const SmpBytes& b) {
  PortInfoFields p;
  p.m_key = field64(b, IB_PORT_MKEY_F);
  p.m_key_protect_bits = static_cast<uint8_t>(field(b, IB_PORT_MKEY_PROT_BITS_F));
  p.gid_prefix = field64(b, IB_PORT_GID_PREFIX_F);
  p.lid = static_cast<uint16_t>(field(b, IB_PORT_LID_F));
  p.capability_mask = field(b, IB_PORT_CAPMASK_F);
  p.capability_mask2 = static_cast<uint16_t>(field(b, IB_PORT_CAPMASK2_F));
  p.local_port = static_cast<uint8_t>(field(b, IB_PORT_LOCAL_PORT_F));
  p.width_active = static_cast<uint8_t>(field(b, IB_PORT_LINK_WIDTH_ACTIVE_F));
  p.state = static_cast<uint8_t>(field(b, IB_PORT_STATE_F));
  p.phys_state = static_cast<uint8_t>(field(b, IB_PORT_PHYS_STATE_F));
  p.lmc = static_cast<uint8_t>(field(b, IB_PORT_LMC_F));
  p.speed_active = static_cast<uint8_t>(field(b, IB_PORT_LINK_SPEED_ACTIVE_F));
  p.speed_ext_active = static_cast<uint8_t>(field(b, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
  p.mtu_cap = static_cast<uint8_t>(field(b, IB_PORT_MTU_CAP_F));
  return p;
}

uint16_t decode_lft_top(const SmpBytes& switch_info) {
  return static_cast<uint16_t>(field(switch_info, IB_SW_LINEAR_FDB_TOP_F));
}

Sl2Vl decode_sl2vl(const SmpBytes& b) {
  Sl2Vl t{};
  for (size_t sl = 0; sl < t.size(); ++sl) {
    const uint8_t byte = b[sl / 2];
    t[sl] = static_cast<uint8_t>(sl % 2 == 0 ? byte >> 4 : byte & 0xF);
  }
  return t;
}

void append_pkeys(const SmpBytes& b, std::vector<uint16_t>& out) {
  for (size_t i = 0; i < b.size() / 2; ++i) {
    const auto pkey = static_cast<uint16_t>(b[2 * i] << 8 | b[2 * i + 1]);
    if ((pkey & 0x7FFF) != 0) out.push_back(pkey);
  }
}

void put_lft_block(const SmpBytes& b, unsigned block, std::vector<uint8_t>& lft) {
  const size_t first = static_cast<size_t>(block) * b.size();
  for (size_t i = 0; i < b.size() && first + i < lft.size(); ++i) lft[first + i] = b[i];
}

std::optional<std::string> fill_port_info(PortModel& pm, const PortInfoFields& info,
                                          uint32_t governing_capmask, bool linked,
                                          const std::string& where) {
  pm.mtu_cap = info.mtu_cap;
  pm.capability_mask = info.capability_mask;
  pm.capability_mask2 = info.capability_mask2;
  const PortRate rate = port_rate(info.width_active, info.speed_active, info.speed_ext_active,
                                  (governing_capmask & kCapHasExtendedSpeeds) != 0);
  pm.rate = rate.rate;
  if (rate.known || !linked) return std::nullopt;
  return fmt::format(
      "{}: LinkWidthActive {} LinkSpeedActive {} LinkSpeedExtActive {} is no rate IBA "
      "defines; its paths get rate code {} (as OpenSM computes it)",
      where, info.width_active, info.speed_active, info.speed_ext_active, rate.rate);
}

}  // namespace rdmaqos::sad
