// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMP payload codecs: byte layouts written out from IBA 14.2.5 (PortInfo offsets as libibmad's
// field table places them).
#include <gtest/gtest.h>

#include "rdma-qos/fabric/intended.h"
#include "rdma-qos/fabric/tables.h"

namespace rdmaqos::fabric {
namespace {

TEST(Tables, PortInfoFieldsComeFromTheirIbaOffsets) {
  std::array<uint8_t, 64> d{};
  d[16] = 0x01, d[17] = 0x02;                // LID 0x0102
  d[20] = 0x00, d[22] = 0x00, d[23] = 0x40;  // CapabilityMask: IsSLMappingSupported
  d[32] = 0x24;                              // LinkSpeedSupported 2, PortState 4
  d[34] = 0x02;                              // LMC 2
  d[37] = 0x40;                              // VLCap 4 (VL0-7)
  d[38] = 10;                                // VLHighLimit
  d[39] = 8, d[40] = 16;                     // VLArb high/low capabilities
  d[43] = 0x30;                              // OperationalVLs 3 (VL0-3)
  auto f = decode_port_info(d);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->lid, 0x0102);
  EXPECT_EQ(f->capability_mask, kCapSlMapping);
  EXPECT_EQ(f->state, 4);
  EXPECT_EQ(f->lmc, 2);
  EXPECT_EQ(f->vl_cap, 4);
  EXPECT_EQ(f->vl_high_limit, 10);
  EXPECT_EQ(f->vlarb_high_cap, 8);
  EXPECT_EQ(f->vlarb_low_cap, 16);
  EXPECT_EQ(f->oper_vls, 3);
}

TEST(Tables, ShortPayloadsDecodeToNothing) {
  std::array<uint8_t, 63> d{};
  EXPECT_FALSE(decode_port_info(d));
  EXPECT_FALSE(decode_sl2vl(d));
  EXPECT_FALSE(decode_vlarb_block(d));
  EXPECT_FALSE(decode_pkey_block(d));
}

TEST(Tables, PKeyBlocksGivePartitionsWithoutTheMembershipBit) {
  std::array<uint8_t, 64> d{};
  d[0] = 0xFF, d[1] = 0xFF;    // entry 0: 0xFFFF, full member of the default partition
  d[2] = 0x00, d[3] = 0x20;    // entry 1: 0x0020, limited member
  d[4] = 0x80, d[5] = 0x20;    // entry 2: 0x8020, full member of the same partition
  d[6] = 0x80, d[7] = 0x00;    // entry 3: 0x8000, no partition (as the empty 0x0000 entries)
  d[62] = 0x80, d[63] = 0x11;  // entry 31: 0x8011
  auto keys = decode_pkey_block(d);
  ASSERT_TRUE(keys);
  EXPECT_EQ(*keys, (std::vector<uint16_t>{0x0011, 0x0020, 0x7FFF}));
}

TEST(Tables, LinkedPortsCarryThePeersPKeysAndSwitchesTheirPortZeros) {
  FabricTables f;
  NodeTables ca;
  ca.guid = 0x10;
  PortTables cp;
  cp.port = 1, cp.guid = 0x11, cp.pkeys = {0x20};
  cp.peer = PortRef{0x100, 0x100, policy::NodeType::kSwitch, "leaf", 3};
  ca.ports.push_back(cp);
  NodeTables sw;
  sw.guid = 0x100, sw.type = policy::NodeType::kSwitch;
  PortTables p0, p3;
  p0.port = 0, p0.guid = 0x100, p0.pkeys = {0x7FFF};
  p3.port = 3, p3.guid = 0x100;
  p3.peer = PortRef{0x10, 0x11, policy::NodeType::kCa, "ca", 1};
  sw.ports = {p0, p3};
  f.nodes = {ca, sw};
  link_peer_pkeys(f);
  EXPECT_EQ(f.nodes[0].ports[0].peer->pkeys, std::vector<uint16_t>{0x7FFF});
  EXPECT_EQ(f.nodes[1].ports[1].peer->pkeys, std::vector<uint16_t>{0x20});
  EXPECT_EQ(f.nodes[1].ref(f.nodes[1].ports[1]).pkeys, std::vector<uint16_t>{0x7FFF});
}

TEST(Tables, Sl2VlPacksTwoSlsPerByteHighNibbleFirst) {
  std::array<uint8_t, 64> d{};
  d[0] = 0x10, d[7] = 0xF7;
  auto t = decode_sl2vl(d);
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[0], 1);
  EXPECT_EQ((*t)[1], 0);
  EXPECT_EQ((*t)[14], 15);
  EXPECT_EQ((*t)[15], 7);
  EXPECT_EQ(encode_sl2vl(*t), d);
}

TEST(Tables, VlArbEntriesAreVlThenWeight) {
  std::array<uint8_t, 64> d{};
  d[0] = 0xF2, d[1] = 63;  // reserved bits set: only the VL nibble counts
  d[62] = 7, d[63] = 1;
  auto t = decode_vlarb_block(d);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->size(), 32u);
  EXPECT_EQ((*t)[0].vl, 2);
  EXPECT_EQ((*t)[0].weight, 63);
  EXPECT_EQ((*t)[31].vl, 7);
  EXPECT_EQ((*t)[31].weight, 1);
  auto e = encode_vlarb_block({{2, 63}, {3, 31}}, 0);
  EXPECT_EQ(e[0], 2);
  EXPECT_EQ(e[1], 63);
  EXPECT_EQ(e[2], 3);
  EXPECT_EQ(e[3], 31);
  EXPECT_EQ(e[4], 0);
}

TEST(Tables, HighLimitSetChangesNoPortState) {
  std::array<uint8_t, 64> cur{};
  cur[32] = 0x24, cur[33] = 0x52, cur[38] = 0, cur[16] = 9;
  auto d = port_info_with_high_limit(cur, 10);
  EXPECT_EQ(d[32], 0x20);  // PortState 0: no change, LinkSpeedSupported kept
  EXPECT_EQ(d[33], 0);     // PhysState, LinkDownDefault: no change
  EXPECT_EQ(d[38], 10);
  EXPECT_EQ(d[16], 9);
}

TEST(Tables, OpenSmMasksVlsToTheOperationalVlsButKeepsVl15) {
  Sl2Vl t{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  Sl2Vl want{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 15};
  EXPECT_EQ(mask_sl2vl(t, 3), want);  // OperVLs 3: VL0-3
}

TEST(Tables, VlArbIsCutToTheCapabilityAndPaddedWithEmptyEntries) {
  VlArbTable t{{0, 4}, {1, 4}, {9, 4}};
  auto cut = cut_vlarb(t, 4, 4);  // 4 entries, VL0-7
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_EQ(cut[2].vl, 1);  // 9 & 7
  EXPECT_EQ(cut[3].vl, 0);
  EXPECT_EQ(cut[3].weight, 0);
}

}  // namespace
}  // namespace rdmaqos::fabric
