// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Signs of M_Key protection in a discovery's scan (discovery_m_key.h) and the daemon's refusal:
// a PortInfo as a level-1 port answers a Get without its M_Key (M_Key read as 0, ProtectBits
// set), and live links across which nothing answered, as ports at level 2 or 3 leave them.
#include <gtest/gtest.h>

#include <string>

#include "discovery_m_key.h"
#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {
namespace {

// PortInfo bytes, laid out by hand from IBA's PortInfo (14.2.5.6): M_Key 0-7, GidPrefix 8-15,
// LID 16-17, CapabilityMask 20-23, LocalPortNum 28, LinkWidthActive 31, LinkSpeedSupported and
// PortState 32, PortPhysicalState and LinkDownDefaultState 33, M_KeyProtectBits (top two bits)
// and LMC (low three) 34.
SmpBytes port_info(uint64_t m_key, uint8_t protect_bits, uint16_t lid, bool link_up) {
  SmpBytes b{};
  for (size_t i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(m_key >> (56 - 8 * i));
  b[8] = 0xFE;
  b[9] = 0x80;
  b[16] = static_cast<uint8_t>(lid >> 8);
  b[17] = static_cast<uint8_t>(lid);
  b[31] = 2;                                        // 4x
  b[32] = link_up ? 0x14 : 0x11;                    // SDR supported; Active or Down
  b[33] = link_up ? 0x52 : 0x22;                    // LinkUp or Polling; default Polling
  b[34] = static_cast<uint8_t>(protect_bits << 6);  // LMC 0
  return b;
}

TEST(MKeyDecode, ALevelOnePortsAnswerReadsProtectBitsAndAZeroKey) {
  const PortInfoFields pi = decode_port_info(port_info(0, 1, 0x12, true));
  EXPECT_EQ(pi.m_key, 0u);
  EXPECT_EQ(pi.m_key_protect_bits, 1);
  EXPECT_EQ(pi.lid, 0x12);
  EXPECT_TRUE(pi.link_up());
  EXPECT_TRUE(pi.active());
}

TEST(MKeyDecode, TheKeyAndLevelThreeAreRead) {
  const PortInfoFields pi = decode_port_info(port_info(0x0123456789abcdefULL, 3, 1, true));
  EXPECT_EQ(pi.m_key, 0x0123456789abcdefULL);
  EXPECT_EQ(pi.m_key_protect_bits, 3);
}

// sm: a CA (GUID 0x10, LID 1) linked at port 1 to switch 0x20 (LID 2) port 1; the switch's
// ports 2 and 3 as given.
Scan two_nodes(bool port2_up, bool port2_linked, SmpBytes ca_port = port_info(0, 0, 1, true)) {
  Scan scan;
  ScanNode ca;
  ca.ni.type = kNodeTypeCa;
  ca.ni.node_guid = 0x10;
  ca.ports.resize(2);
  ca.ports[1].set_info(ca_port);
  ca.ports[1].linked = true;
  ca.ports[1].remote_guid = 0x20;
  ca.ports[1].remote_port = 1;
  ScanNode sw;
  sw.ni.type = kNodeTypeSwitch;
  sw.ni.node_guid = 0x20;
  sw.path = {1};
  sw.ports.resize(4);
  sw.ports[0].set_info(port_info(0, 0, 2, true));
  sw.ports[1].set_info(port_info(0, 0, 0, true));
  sw.ports[1].linked = true;
  sw.ports[1].remote_guid = 0x10;
  sw.ports[1].remote_port = 1;
  sw.ports[2].set_info(port_info(0, 0, 0, port2_up));
  sw.ports[2].linked = port2_linked;
  sw.ports[3].set_info(port_info(0, 0, 0, false));
  scan.nodes = {ca, sw};
  scan.self_guid = 0x10;
  scan.self_port = 1;
  return scan;
}

TEST(MKeySigns, AFabricAnsweredAcrossEveryLiveLinkShowsNone) {
  const MKeySigns signs = m_key_signs(two_nodes(true, true));
  EXPECT_TRUE(signs.unanswered.empty());
  EXPECT_FALSE(signs.level1);
}

TEST(MKeySigns, ALiveSwitchPortNobodyAnsweredAcrossIsNamedWithItsRoute) {
  const MKeySigns signs = m_key_signs(two_nodes(true, false));
  ASSERT_EQ(signs.unanswered.size(), 1u);
  EXPECT_EQ(signs.unanswered[0],
            "switch 0x0000000000000020 port 2 (LID 2): the link is up, but the node behind it "
            "(directed route 0,1,2) answered no SMP");
}

TEST(MKeySigns, ADownPortIsNoSign) {
  EXPECT_TRUE(m_key_signs(two_nodes(false, false)).unanswered.empty());
}

TEST(MKeySigns, TheOwnPortWithNoAnswerBehindItIsASign) {
  // The switch answered nothing: discovery saw only its own node.
  Scan scan = two_nodes(true, true);
  scan.nodes[0].ports[1].linked = false;
  scan.nodes.pop_back();
  const MKeySigns signs = m_key_signs(scan);
  ASSERT_EQ(signs.unanswered.size(), 1u);
  EXPECT_NE(signs.unanswered[0].find("CA 0x0000000000000010 port 1 (LID 1)"), std::string::npos);
  EXPECT_NE(signs.unanswered[0].find("directed route 0,1"), std::string::npos);
}

TEST(MKeySigns, AnotherCasUnlinkedPortIsNoSign) {
  // It may lead out of the subnet; libibnetdisc does not walk through CAs.
  Scan scan = two_nodes(true, true);
  ScanNode other = scan.nodes[0];
  other.ni.node_guid = 0x30;
  other.ports[1].linked = false;
  scan.nodes.push_back(other);
  EXPECT_TRUE(m_key_signs(scan).unanswered.empty());
}

TEST(MKeySigns, LevelOnePortsWithAZeroKeyAreOneWarning) {
  Scan scan = two_nodes(true, true, port_info(0, 1, 1, true));
  scan.nodes[1].ports[0].set_info(port_info(0, 1, 2, true));
  const MKeySigns signs = m_key_signs(scan);
  EXPECT_TRUE(signs.unanswered.empty());
  ASSERT_TRUE(signs.level1);
  EXPECT_EQ(signs.level1->rfind("2 ports M_Key-protected at level 1 read M_Key 0 (first: CA "
                                "0x0000000000000010 port 1 (LID 1))",
                                0),
            0u)
      << *signs.level1;
  EXPECT_NE(signs.level1->find("--m-key"), std::string::npos);
}

TEST(MKeySigns, AKeyReadBackIsNoSign) {
  // The M_Key matched (or protection is off): the port returns its key.
  const MKeySigns signs = m_key_signs(two_nodes(true, true, port_info(0xfeed, 1, 1, true)));
  EXPECT_FALSE(signs.level1);
}

TEST(MKeyRefusal, NoUnansweredLinkNoRefusal) {
  EXPECT_FALSE(m_key_refusal(Discovery{}, 0));
}

TEST(MKeyRefusal, WithoutAKeyItAsksForOne) {
  Discovery d;
  d.unanswered = {"switch 0x20 port 2 (LID 2): ..."};
  auto refused = m_key_refusal(d, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused->message.find("1 live link with no node answering behind it (first: "
                                  "switch 0x20 port 2 (LID 2): ...)"),
            std::string::npos)
      << refused->message;
  EXPECT_NE(refused->message.find("give the subnet's M_Key with --m-key"), std::string::npos);
}

TEST(MKeyRefusal, WithAKeyItSaysTheKeyIsNotTheirs) {
  Discovery d;
  d.unanswered = {"a", "b"};
  auto refused = m_key_refusal(d, 0xfeed);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->message.find("2 live links with no node answering behind them"),
            std::string::npos);
  EXPECT_NE(refused->message.find("the M_Key given (--m-key, or m_key of --opensm-conf) is not "
                                  "theirs"),
            std::string::npos);
}

}  // namespace
}  // namespace rdmaqos::sad
