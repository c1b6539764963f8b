// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RoCE v2 pcap reader: field extraction from hand-built frames (expected values written
// out), rejection of what is not RoCE v2, and reading pcap files written with libpcap.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "rdma-qos/testbed/roce_pcap.h"

namespace rdmaqos::testbed {
namespace {

using Bytes = std::vector<std::uint8_t>;

void put16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}

Bytes ethernet(std::uint16_t ethertype) {
  Bytes b = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1};
  put16(b, ethertype);
  return b;
}

// UDP header + BTH (opcode, destination QP, PSN) + payload.
Bytes udp_bth(std::uint16_t sport, std::uint16_t dport, std::uint8_t opcode, std::uint32_t dqp,
              std::uint32_t psn, const Bytes& payload = {}) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<std::uint16_t>(8 + 12 + payload.size()));
  put16(b, 0);
  Bytes bth = {opcode,
               0,
               0xff,
               0xff,
               0,
               static_cast<std::uint8_t>(dqp >> 16),
               static_cast<std::uint8_t>(dqp >> 8),
               static_cast<std::uint8_t>(dqp),
               0,
               static_cast<std::uint8_t>(psn >> 16),
               static_cast<std::uint8_t>(psn >> 8),
               static_cast<std::uint8_t>(psn)};
  b.insert(b.end(), bth.begin(), bth.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes ipv4_frame(std::uint8_t tos, const Bytes& udp) {
  Bytes b = ethernet(0x0800);
  Bytes ip = {0x45, tos, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
  ip[2] = static_cast<std::uint8_t>((20 + udp.size()) >> 8);
  ip[3] = static_cast<std::uint8_t>(20 + udp.size());
  b.insert(b.end(), ip.begin(), ip.end());
  b.insert(b.end(), udp.begin(), udp.end());
  return b;
}

Bytes ipv6_frame(std::uint8_t traffic_class, std::uint32_t flow_label, const Bytes& udp) {
  Bytes b = ethernet(0x86dd);
  Bytes ip = {static_cast<std::uint8_t>(0x60 | traffic_class >> 4),
              static_cast<std::uint8_t>((traffic_class & 0xf) << 4 | (flow_label >> 16 & 0xf)),
              static_cast<std::uint8_t>(flow_label >> 8), static_cast<std::uint8_t>(flow_label)};
  put16(ip, static_cast<std::uint16_t>(udp.size()));
  ip.push_back(17);
  ip.push_back(64);
  Bytes src(16, 0), dst(16, 0);
  src[0] = dst[0] = 0xfd;
  src[15] = 1;
  dst[15] = 2;
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), dst.begin(), dst.end());
  b.insert(b.end(), ip.begin(), ip.end());
  b.insert(b.end(), udp.begin(), udp.end());
  return b;
}

TEST(RocePcap, DecodesIpv4RcPacket) {
  auto p = decode_roce_frame(ipv4_frame(0x68, udp_bth(0xca06, 4791, 0x04, 0x11, 5)),
                             LinkType::kEthernet);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ip_version, 4);
  EXPECT_EQ(p->src, "10.0.0.1");
  EXPECT_EQ(p->dst, "10.0.0.2");
  EXPECT_EQ(p->udp_src_port, 0xca06);
  EXPECT_EQ(p->udp_dst_port, 4791);
  EXPECT_EQ(p->dscp, 26);
  EXPECT_EQ(p->ecn, 0);
  EXPECT_EQ(p->flow_label, 0u);
  EXPECT_EQ(p->opcode, 0x04);
  EXPECT_EQ(p->dest_qp, 0x11u);
  EXPECT_EQ(p->psn, 5u);
  EXPECT_FALSE(p->mad_class);
  EXPECT_FALSE(p->cm_request);
}

TEST(RocePcap, DecodesIpv6FlowLabelAndTrafficClass) {
  auto p = decode_roce_frame(ipv6_frame(0x69, 0x12345, udp_bth(58177, 4791, 0x0a, 0xabcdef, 7)),
                             LinkType::kEthernet);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ip_version, 6);
  EXPECT_EQ(p->src, "fd00::1");
  EXPECT_EQ(p->dst, "fd00::2");
  EXPECT_EQ(p->flow_label, 0x12345u);
  EXPECT_EQ(p->dscp, 26);
  EXPECT_EQ(p->ecn, 1);
  EXPECT_EQ(p->udp_src_port, 58177);
  EXPECT_EQ(p->dest_qp, 0xabcdefu);
}

TEST(RocePcap, DecodesCmRequestServiceIdAndSourcePort) {
  Bytes deth(8, 0);
  Bytes mad(256, 0);
  mad[0] = 1;
  mad[1] = 0x07;  // CM class
  mad[16] = 0x00;
  mad[17] = 0x10;  // REQ
  // Service ID 0x0000000001061d1f (RDMA_PS_TCP, port 7455) at byte 32.
  const Bytes sid = {0, 0, 0, 0, 0x01, 0x06, 0x1d, 0x1f};
  std::copy(sid.begin(), sid.end(), mad.begin() + 32);
  mad[166] = 0xd4;  // cma_hdr.port: 54321
  mad[167] = 0x31;
  Bytes payload = deth;
  payload.insert(payload.end(), mad.begin(), mad.end());
  auto p = decode_roce_frame(ipv4_frame(0, udp_bth(55410, 4791, 0x64, 1, 0, payload)),
                             LinkType::kEthernet);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->udp_src_port, 55410);
  ASSERT_TRUE(p->mad_class);
  EXPECT_EQ(*p->mad_class, 0x07);
  EXPECT_EQ(*p->mad_attribute, 0x0010);
  ASSERT_TRUE(p->cm_request);
  EXPECT_EQ(p->cm_request->service_id, 0x1061d1fu);
  EXPECT_EQ(p->cm_request->src_port, 54321);
}

TEST(RocePcap, CmReplyHasNoRequestFields) {
  Bytes payload(8 + 256, 0);
  payload[8 + 1] = 0x07;
  payload[8 + 17] = 0x13;  // REP
  auto p = decode_roce_frame(ipv4_frame(0, udp_bth(55410, 4791, 0x64, 1, 0, payload)),
                             LinkType::kEthernet);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->mad_attribute, 0x0013);
  EXPECT_FALSE(p->cm_request);
}

TEST(RocePcap, RejectsOtherUdpTraffic) {
  EXPECT_FALSE(
      decode_roce_frame(ipv4_frame(0, udp_bth(1234, 53, 0x04, 0x11, 0)), LinkType::kEthernet));
}

TEST(RocePcap, RejectsTruncatedFrames) {
  Bytes frame = ipv4_frame(0, udp_bth(0xc000, 4791, 0x04, 0x11, 0));
  for (std::size_t n = 0; n < frame.size(); ++n) {
    EXPECT_FALSE(decode_roce_frame({frame.data(), n}, LinkType::kEthernet)) << n;
  }
}

TEST(RocePcap, DecodesRawIpFrames) {
  Bytes frame = ipv4_frame(0, udp_bth(0xc000, 4791, 0x04, 0x11, 0));
  auto p = decode_roce_frame(std::span(frame).subspan(14), LinkType::kRaw);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->udp_src_port, 0xc000);
}

TEST(RocePcap, TsvLineListsEveryField) {
  auto p = decode_roce_frame(ipv4_frame(0x68, udp_bth(0xca06, 4791, 0x04, 0x11, 5)),
                             LinkType::kEthernet);
  ASSERT_TRUE(p);
  EXPECT_EQ(to_tsv(*p), "4\t10.0.0.1\t10.0.0.2\t51718\t0x0\t26\t0\t0x4\t17\t5\t-\t-\t-\t-");
}

class RocePcapFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("roce_pcap_test_" + std::to_string(getpid()) + ".pcap");
  }
  void TearDown() override { std::filesystem::remove(path_); }

  void write(const std::vector<Bytes>& frames) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
    ASSERT_NE(dead, nullptr);
    pcap_dumper_t* dumper = pcap_dump_open(dead, path_.c_str());
    ASSERT_NE(dumper, nullptr);
    for (const auto& f : frames) {
      pcap_pkthdr h{};
      h.caplen = h.len = static_cast<bpf_u_int32>(f.size());
      pcap_dump(reinterpret_cast<u_char*>(dumper), &h, f.data());
    }
    pcap_dump_close(dumper);
    pcap_close(dead);
  }

  std::filesystem::path path_;
};

TEST_F(RocePcapFile, ReadsOnlyRocePacketsInOrder) {
  write({ipv4_frame(0, udp_bth(0xc001, 4791, 0x04, 0x11, 1)),
         ipv4_frame(0, udp_bth(1234, 53, 0x04, 0x11, 2)),
         ipv4_frame(0, udp_bth(0xc002, 4791, 0x11, 0x12, 3))});
  auto result = read_roce_pcap(path_);
  EXPECT_EQ(result.error, "");
  ASSERT_EQ(result.packets.size(), 2u);
  EXPECT_EQ(result.packets[0].udp_src_port, 0xc001);
  EXPECT_EQ(result.packets[1].udp_src_port, 0xc002);
  EXPECT_EQ(result.packets[1].opcode, 0x11);
}

TEST_F(RocePcapFile, MissingFileIsAnError) {
  auto result = read_roce_pcap(path_.string() + ".missing");
  EXPECT_NE(result.error, "");
  EXPECT_TRUE(result.packets.empty());
}

}  // namespace
}  // namespace rdmaqos::testbed
