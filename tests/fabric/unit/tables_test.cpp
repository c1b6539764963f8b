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
