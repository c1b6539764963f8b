// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Decodes RoCE v2 packets (UDP port 4791) from captures, so VM tests can assert on what the
// kernel actually put on the wire: addresses, UDP source port, flow label, DSCP/ECN, BTH.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmaqos::testbed {

// What a CM REQ (class 0x07, attribute 0x0010) carries for rdma_cm's port-based services.
struct CmRequest {
  std::uint64_t service_id = 0;  // the rdma_cm port is its low 16 bits
  std::uint16_t src_port = 0;    // cma_hdr.port in the private data: the active side's port
};

struct RocePacket {
  int ip_version = 0;  // 4 or 6
  std::string src;     // textual addresses (inet_ntop)
  std::string dst;
  std::uint16_t udp_src_port = 0;
  std::uint16_t udp_dst_port = 0;
  std::uint32_t flow_label = 0;  // IPv6 only; 0 for IPv4
  std::uint8_t dscp = 0;
  std::uint8_t ecn = 0;
  std::uint8_t opcode = 0;  // BTH opcode
  std::uint32_t dest_qp = 0;
  std::uint32_t psn = 0;
  // Management datagrams (to QP1, UD SEND only): MAD class and attribute.
  std::optional<std::uint8_t> mad_class;
  std::optional<std::uint16_t> mad_attribute;
  std::optional<CmRequest> cm_request;
};

// Link layers this reader understands (veth captures are Ethernet; "any" gives Linux SLL).
enum class LinkType { kEthernet, kRaw, kLinuxSll };

// Decodes one captured frame; nullopt for anything that is not a complete RoCE v2 packet.
std::optional<RocePacket> decode_roce_frame(std::span<const std::uint8_t> frame, LinkType link);

struct PcapReadResult {
  std::vector<RocePacket> packets;
  std::string error;  // empty on success
};

// Reads every RoCE v2 packet of a pcap file, in capture order.
PcapReadResult read_roce_pcap(const std::string& path);

// One tab-separated line per packet ("-" for absent fields), and the matching header line.
std::string roce_tsv_header();
std::string to_tsv(const RocePacket& packet);

}  // namespace rdmaqos::testbed
