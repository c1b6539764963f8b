// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE v2 decoding over libpcap: Ethernet/SLL/raw IP -> IPv4/IPv6 -> UDP 4791 -> BTH, and for
// QP1 the MAD header and the CM REQ fields tests need to learn rdma_cm's ports.
#include "rdma-qos/testbed/roce_pcap.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <memory>

namespace rdmaqos::testbed {
namespace {

constexpr std::uint16_t kRoceV2Port = 4791;
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;
constexpr std::uint8_t kIpProtoUdp = 17;
constexpr std::size_t kBthSize = 12;
constexpr std::size_t kDethSize = 8;
constexpr std::uint8_t kUdSendOnly = 0x64;
constexpr std::uint8_t kMadClassCm = 0x07;
constexpr std::uint16_t kCmAttrReq = 0x0010;
// IBA CM REQ layout: the service ID follows the 24-byte MAD header and 8 bytes of
// communication IDs; the 92 bytes of private data end the 256-byte MAD.
constexpr std::size_t kMadSize = 256;
constexpr std::size_t kCmReqServiceIdOffset = 32;
constexpr std::size_t kCmReqPrivateDataOffset = 164;
// rdma_cm's cma_hdr: version, IP version, then the source port (big endian).
constexpr std::size_t kCmaHdrPortOffset = 2;

std::uint16_t be16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] << 8 | b[at + 1]);
}

std::uint32_t be24(std::span<const std::uint8_t> b, std::size_t at) {
  return std::uint32_t{b[at]} << 16 | std::uint32_t{b[at + 1]} << 8 | b[at + 2];
}

std::uint64_t be64(std::span<const std::uint8_t> b, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}

std::string address(int family, const std::uint8_t* bytes) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, text, sizeof(text));
  return text;
}

// Strips the link layer; returns the network protocol (ethertype) and the IP packet.
std::optional<std::pair<std::uint16_t, std::span<const std::uint8_t>>> network_layer(
    std::span<const std::uint8_t> frame, LinkType link) {
  std::size_t at = 0;
  std::uint16_t type = 0;
  switch (link) {
    case LinkType::kEthernet:
      if (frame.size() < 14) return std::nullopt;
      type = be16(frame, 12);
      at = 14;
      while (type == kEtherTypeVlan) {
        if (frame.size() < at + 4) return std::nullopt;
        type = be16(frame, at + 2);
        at += 4;
      }
      break;
    case LinkType::kLinuxSll:
      if (frame.size() < 16) return std::nullopt;
      type = be16(frame, 14);
      at = 16;
      break;
    case LinkType::kRaw:
      if (frame.empty()) return std::nullopt;
      type = (frame[0] >> 4) == 6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
      break;
  }
  return std::pair{type, frame.subspan(at)};
}

void decode_mad(std::span<const std::uint8_t> mad, RocePacket& p) {
  if (mad.size() < 24) return;
  p.mad_class = mad[1];
  p.mad_attribute = be16(mad, 16);
  if (mad[1] != kMadClassCm || *p.mad_attribute != kCmAttrReq || mad.size() < kMadSize) return;
  p.cm_request = CmRequest{be64(mad, kCmReqServiceIdOffset),
                           be16(mad, kCmReqPrivateDataOffset + kCmaHdrPortOffset)};
}

}  // namespace

std::optional<RocePacket> decode_roce_frame(std::span<const std::uint8_t> frame, LinkType link) {
  auto net = network_layer(frame, link);
  if (!net) return std::nullopt;
  auto [type, ip] = *net;
  RocePacket p;
  std::span<const std::uint8_t> udp;
  if (type == kEtherTypeIpv4) {
    if (ip.size() < 20 || (ip[0] >> 4) != 4) return std::nullopt;
    std::size_t header = std::size_t{ip[0] & 0x0fu} * 4;
    if (header < 20 || ip.size() < header || ip[9] != kIpProtoUdp) return std::nullopt;
    p.ip_version = 4;
    p.dscp = ip[1] >> 2;
    p.ecn = ip[1] & 0x3;
    p.src = address(AF_INET, &ip[12]);
    p.dst = address(AF_INET, &ip[16]);
    udp = ip.subspan(header);
  } else if (type == kEtherTypeIpv6) {
    // RoCE v2 puts UDP right after the fixed header: extension headers are not followed.
    if (ip.size() < 40 || (ip[0] >> 4) != 6 || ip[6] != kIpProtoUdp) return std::nullopt;
    p.ip_version = 6;
    std::uint8_t traffic_class = static_cast<std::uint8_t>((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    p.dscp = traffic_class >> 2;
    p.ecn = traffic_class & 0x3;
    p.flow_label = std::uint32_t{ip[1] & 0x0fu} << 16 | std::uint32_t{ip[2]} << 8 | ip[3];
    p.src = address(AF_INET6, &ip[8]);
    p.dst = address(AF_INET6, &ip[24]);
    udp = ip.subspan(40);
  } else {
    return std::nullopt;
  }
  if (udp.size() < 8 + kBthSize) return std::nullopt;
  p.udp_src_port = be16(udp, 0);
  p.udp_dst_port = be16(udp, 2);
  if (p.udp_dst_port != kRoceV2Port) return std::nullopt;
  auto bth = udp.subspan(8);
  p.opcode = bth[0];
  p.dest_qp = be24(bth, 5);
  p.psn = be24(bth, 9);
  if (p.dest_qp == 1 && p.opcode == kUdSendOnly && bth.size() >= kBthSize + kDethSize) {
    decode_mad(bth.subspan(kBthSize + kDethSize), p);
  }
  return p;
}

PcapReadResult read_roce_pcap(const std::string& path) {
  PcapReadResult result;
  char error[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<pcap_t, decltype(&pcap_close)> pcap(pcap_open_offline(path.c_str(), error),
                                                      &pcap_close);
  if (!pcap) {
    result.error = error;
    return result;
  }
  int dlt = pcap_datalink(pcap.get());
  if (dlt != DLT_EN10MB && dlt != DLT_RAW && dlt != DLT_LINUX_SLL) {
    result.error = path + ": unsupported link type " + std::to_string(dlt);
    return result;
  }
  LinkType link = dlt == DLT_EN10MB ? LinkType::kEthernet
                  : dlt == DLT_RAW  ? LinkType::kRaw
                                    : LinkType::kLinuxSll;
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  int rc = 0;
  while ((rc = pcap_next_ex(pcap.get(), &header, &data)) == 1) {
    auto p = decode_roce_frame({data, header->caplen}, link);
    if (p) result.packets.push_back(std::move(*p));
  }
  if (rc == PCAP_ERROR) result.error = path + ": " + pcap_geterr(pcap.get());
  return result;
}

std::string roce_tsv_header() {
  return "ip\tsrc\tdst\tsport\tflow_label\tdscp\tecn\topcode\tdest_qp\tpsn\tmad_class\tmad_attr"
         "\tcm_service_id\tcm_src_port";
}

std::string to_tsv(const RocePacket& p) {
  auto hex = [](std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
    return std::string(text);
  };
  std::string line = std::to_string(p.ip_version) + '\t' + p.src + '\t' + p.dst + '\t' +
                     std::to_string(p.udp_src_port) + '\t' + hex(p.flow_label) + '\t' +
                     std::to_string(p.dscp) + '\t' + std::to_string(p.ecn) + '\t' + hex(p.opcode) +
                     '\t' + std::to_string(p.dest_qp) + '\t' + std::to_string(p.psn) + '\t';
  line += p.mad_class ? hex(*p.mad_class) : "-";
  line += '\t';
  line += p.mad_attribute ? hex(*p.mad_attribute) : "-";
  line += '\t';
  line += p.cm_request ? hex(p.cm_request->service_id) : "-";
  line += '\t';
  line += p.cm_request ? std::to_string(p.cm_request->src_port) : "-";
  return line;
}

}  // namespace rdmaqos::testbed
