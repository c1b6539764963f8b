// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The kernel's "local service" path-query protocol over RDMA netlink (uapi rdma/rdma_netlink.h,
// rdma/ib_user_sa.h): RESOLVE requests in, PathRecord / error replies and SET_TIMEOUT out.
// Pure codecs over bytes, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::kmod {

using rdmaqos::Result;

// Values of the uapi header, restated so the codec's users need not include it.
constexpr uint16_t kResolveType = 0x1000;     // RDMA_NL_GET_TYPE(RDMA_NL_LS, RESOLVE)
constexpr uint16_t kSetTimeoutType = 0x1001;  // RDMA_NL_GET_TYPE(RDMA_NL_LS, SET_TIMEOUT)
constexpr uint16_t kFlagErr = 0x0100;         // RDMA_NL_LS_F_ERR
constexpr unsigned kGroupLs = 3;              // RDMA_NL_GROUP_LS
constexpr int kNetlinkRdma = 20;              // NETLINK_RDMA

enum class PathUse : uint8_t { kAll = 0, kUnidirectional = 1, kGmp = 2 };

// struct ib_path_rec_data flags (rdma/ib_user_sa.h).
namespace path_flags {
constexpr uint32_t kGmp = 1u << 0;
constexpr uint32_t kPrimary = 1u << 1;
constexpr uint32_t kAlternate = 1u << 2;
constexpr uint32_t kOutbound = 1u << 3;
constexpr uint32_t kInbound = 1u << 4;
constexpr uint32_t kInboundReverse = 1u << 5;
constexpr uint32_t kBidirectional = kOutbound | kInboundReverse;
}  // namespace path_flags

// The netlink header of any message (what an error reply needs even when the body is bad).
struct MessageHeader {
  uint32_t length = 0;
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint32_t port_id = 0;
};

// A decoded RESOLVE request: the rdma_ls_resolve_header and the attributes the kernel put in
// (each present only when the query's component mask had it).
struct ResolveRequest {
  uint32_t seq = 0;
  std::string device;  // device_name, without the padding
  uint8_t port_num = 0;
  PathUse path_use = PathUse::kAll;
  std::optional<uint64_t> service_id;
  std::optional<sa::Gid> dgid;
  std::optional<sa::Gid> sgid;
  std::optional<uint8_t> tclass;
  std::optional<uint16_t> pkey;
  std::optional<uint16_t> qos_class;  // 12 bits, right-aligned as the kernel sends it

  bool operator==(const ResolveRequest&) const = default;
};

// One PathRecord attribute of a reply: struct ib_path_rec_data.
struct ReplyPath {
  uint32_t flags = 0;
  sa::PathRecord record;
};

// The header of the first message in `bytes`, when at least a whole nlmsghdr is there.
std::optional<MessageHeader> peek_header(std::span<const uint8_t> bytes);

// Decodes one RESOLVE request (one netlink message; bytes past nlmsg_len are ignored). Every
// attribute is checked for length and range; the MANDATORY flag is masked off; an unknown
// mandatory attribute, a duplicate, a missing SGID or DGID, or trailing garbage is an error.
Result<ResolveRequest> decode_resolve_request(std::span<const uint8_t> message);

// A reply carrying `paths` (LS_NLA_TYPE_PATH_RECORD attributes, no family header).
Result<std::vector<uint8_t>> encode_resolve_reply(uint32_t seq, std::span<const ReplyPath> paths);
// A reply with RDMA_NL_LS_F_ERR: the kernel then asks the SA itself.
std::vector<uint8_t> encode_error_reply(uint32_t seq);
// SET_TIMEOUT (NLM_F_REQUEST, LS_NLA_TYPE_TIMEOUT in milliseconds), with NLM_F_ACK: the
// kernel answers it with an NLMSG_ERROR either way (error 0: accepted), so the daemon knows.
std::vector<uint8_t> encode_set_timeout(uint32_t seq, uint32_t timeout_ms);

// The kernel's NLMSG_ERROR (struct nlmsgerr): its acknowledgement of a message that asked for
// one (error 0) or its refusal of one (a negative errno). `seq` and `acked_type` are those of
// the message it answers: a refused SET_TIMEOUT and a refused reply to a request of the same
// seq differ only by that type.
struct NetlinkAck {
  uint32_t seq = 0;
  int error = 0;
  uint16_t acked_type = 0;
};
Result<NetlinkAck> decode_ack(std::span<const uint8_t> message);

// Decoders of what this side sends, for tests and for a peer playing the kernel.
struct DecodedReply {
  MessageHeader header;
  bool error = false;
  std::vector<ReplyPath> paths;
};
Result<DecodedReply> decode_resolve_reply(std::span<const uint8_t> message);
Result<uint32_t> decode_set_timeout(std::span<const uint8_t> message);
// A RESOLVE request as the kernel's sa_query.c builds it (tests, the fuzzer's seeds).
std::vector<uint8_t> encode_resolve_request(const ResolveRequest& request);

// The SA query a request stands for: SGID, DGID and every attribute present, Reversible when
// the path serves both directions, one path.
sa::PathQuery to_path_query(const ResolveRequest& request);

// The SA query for the reverse path of a path_use ALL request (rdma_cm on 6.1+): DGID -> SGID,
// one path, not reversible, with the request's Service-ID, QoS-Class, TClass and PKey. Empty
// for the other path uses, whose answer is one record.
std::optional<sa::PathQuery> to_reverse_path_query(const ResolveRequest& request);

// The PathRecord attributes of the reply, from the SA's answers (the first record of each):
// - UNIDIRECTIONAL: PRIMARY|OUTBOUND (the forward path).
// - GMP (pre-6.1 kernels' reversible queries): PRIMARY|GMP|BIDIRECTIONAL.
// - ALL (6.1+, rdma_cm): PRIMARY|GMP|BIDIRECTIONAL, then PRIMARY|OUTBOUND (the same forward
//   path), then PRIMARY|INBOUND (the reverse DGID -> SGID path, when `reverse` has one). The
//   GMP record comes first: a pre-6.1 kernel takes the first record holding all of
//   PRIMARY|GMP|BIDIRECTIONAL (the others lack GMP), and a 6.1+ kernel converting the answer
//   for OPA takes the first PRIMARY one; 6.1+ rdma_cm files the records by flags (GMP first,
//   then INBOUND, then OUTBOUND) as the route's path and its per-direction paths, at most 3.
// The request's Service-ID and QoS-Class fill each record where the SA left them zero (OpenSM
// does not echo the QoS class). Empty when `records` is.
std::vector<ReplyPath> reply_paths(const ResolveRequest& request,
                                   std::span<const sa::PathRecord> records,
                                   std::span<const sa::PathRecord> reverse = {});

}  // namespace rdmaqos::kmod
