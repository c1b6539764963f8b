// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The local-service netlink codec against byte images built by hand from the uapi layouts:
// requests as sa_query.c builds them (MANDATORY flag, IPv4-mapped, link-local and global IPv6
// GIDs, each path_use), malformed requests, replies checked field by field, and the kernel's
// acknowledgements.
#include <gtest/gtest.h>

#include "ls_bytes.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/kmod-shim/lsd.h"

namespace rdmaqos::kmod {
namespace {

using namespace testing;  // NOLINT: the byte builders

const std::vector<uint8_t> kIpv4MappedSgid = {0, 0, 0,    0,    0,  0, 0, 0,
                                              0, 0, 0xff, 0xff, 10, 0, 0, 1};
const std::vector<uint8_t> kIpv4MappedDgid = {0, 0, 0,    0,    0,  0, 0, 0,
                                              0, 0, 0xff, 0xff, 10, 0, 0, 2};
// fe80::2:c903:a0:11 and fe80::2:c903:a0:21 (port GUIDs of an IB fabric).
const std::vector<uint8_t> kIbSgid = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                                      0x00, 0x02, 0xc9, 0x03, 0x00, 0xa0, 0x00, 0x11};
const std::vector<uint8_t> kIbDgid = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                                      0x00, 0x02, 0xc9, 0x03, 0x00, 0xa0, 0x00, 0x21};

// 2001:db8:1::11 and 2001:db8:2::21: global unicast GIDs in two subnets (a routed fabric, or
// RoCE v2 over global IPv6 addresses).
const std::vector<uint8_t> kGlobalSgid = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0,
                                          0,    0,    0,    0,    0, 0, 0, 0x11};
const std::vector<uint8_t> kGlobalDgid = {0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0,
                                          0,    0,    0,    0,    0, 0, 0, 0x21};

sa::Gid gid(const std::vector<uint8_t>& v) {
  sa::Gid g;
  std::copy(v.begin(), v.end(), g.begin());
  return g;
}

// What rdma_cm puts in a query for an iSER connection (TCP port space, port 3260).
RequestBytes iser_request(uint8_t path_use = 0) {
  RequestBytes r(77, "mlx5_0", 1, path_use);
  r.u64(kAttrServiceId, 0x0000000001060CBCULL)
      .gid(kAttrDgid, kIbDgid)
      .gid(kAttrSgid, kIbSgid)
      .u8(kAttrTclass, 0x68)
      .u16(kAttrPkey, 0xffff)
      .u16(kAttrQosClass, 7);
  return r;
}

TEST(LsRequest, DecodesEveryAttributeOfAnRdmaCmQuery) {
  auto req = decode_resolve_request(iser_request().bytes());
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_EQ(req->seq, 77u);
  EXPECT_EQ(req->device, "mlx5_0");
  EXPECT_EQ(req->port_num, 1);
  EXPECT_EQ(req->path_use, PathUse::kAll);
  EXPECT_EQ(req->service_id, 0x0000000001060CBCULL);
  EXPECT_EQ(req->dgid, gid(kIbDgid));
  EXPECT_EQ(req->sgid, gid(kIbSgid));
  EXPECT_EQ(req->tclass, 0x68);
  EXPECT_EQ(req->pkey, 0xffff);
  EXPECT_EQ(req->qos_class, 7);
}

TEST(LsRequest, DecodesIpv4MappedGidsWithoutOptionalAttributes) {
  RequestBytes r(5, "rxe0", 1, /*UNIDIRECTIONAL*/ 1);
  r.gid(kAttrDgid, kIpv4MappedDgid).gid(kAttrSgid, kIpv4MappedSgid);
  auto req = decode_resolve_request(r.bytes());
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_EQ(req->path_use, PathUse::kUnidirectional);
  EXPECT_EQ(sa::format_gid(*req->sgid), "::ffff:10.0.0.1");
  EXPECT_EQ(sa::format_gid(*req->dgid), "::ffff:10.0.0.2");
  EXPECT_FALSE(req->service_id);
  EXPECT_FALSE(req->qos_class);
  EXPECT_FALSE(req->tclass);
  EXPECT_FALSE(req->pkey);
}

TEST(LsRequest, DecodesGlobalIpv6GidsAndAsksTheSaForExactlyThem) {
  RequestBytes r(6, "mlx5_1", 2, /*ALL*/ 0);
  r.u64(kAttrServiceId, 0x0000000001060CBCULL)
      .gid(kAttrDgid, kGlobalDgid)
      .gid(kAttrSgid, kGlobalSgid);
  auto req = decode_resolve_request(r.bytes());
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_EQ(req->device, "mlx5_1");
  EXPECT_EQ(req->port_num, 2);
  EXPECT_EQ(req->sgid, gid(kGlobalSgid));
  EXPECT_EQ(req->dgid, gid(kGlobalDgid));
  EXPECT_EQ(sa::format_gid(*req->sgid), "2001:db8:1::11");
  EXPECT_EQ(sa::format_gid(*req->dgid), "2001:db8:2::21");
  // The GIDs go to the SA unchanged (no subnet-prefix rewriting), and the reverse query of
  // path_use ALL swaps them.
  auto q = to_path_query(*req);
  EXPECT_EQ(q.record.sgid, gid(kGlobalSgid));
  EXPECT_EQ(q.record.dgid, gid(kGlobalDgid));
  auto back = to_reverse_path_query(*req);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->record.sgid, gid(kGlobalDgid));
  EXPECT_EQ(back->record.dgid, gid(kGlobalSgid));
}

TEST(LsReply, GlobalIpv6GidsGoIntoTheRecordAsTheyAre) {
  sa::PathRecord rec;
  rec.sgid = gid(kGlobalSgid);
  rec.dgid = gid(kGlobalDgid);
  rec.slid = 2;
  rec.dlid = 3;
  rec.hop_limit = 64;  // a routed path: the GRH leaves the subnet
  std::vector<ReplyPath> paths = {{0x0A, rec}};
  auto bytes = encode_resolve_reply(6, paths);
  ASSERT_TRUE(bytes) << bytes.error().message;
  const auto& b = *bytes;
  ASSERT_EQ(b.size(), 16u + 4 + 72);
  const size_t pr = 28;
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 8, b.begin() + pr + 24), kGlobalDgid);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 24, b.begin() + pr + 40), kGlobalSgid);
  // RawTraffic 0, FlowLabel 0, HopLimit 64: bytes 44..47 of the record, big-endian.
  EXPECT_EQ(b[pr + 47], 64);
}

TEST(LsRequest, DecodesGmpPathUse) {
  auto req = decode_resolve_request(iser_request(2).bytes());
  ASSERT_TRUE(req);
  EXPECT_EQ(req->path_use, PathUse::kGmp);
}

TEST(LsRequest, AcceptsAttributesWithoutTheMandatoryFlag) {
  RequestBytes r(1, "mlx4_0", 2, 0);
  r.attr(kAttrDgid, kIbDgid.data(), 16, false).attr(kAttrSgid, kIbSgid.data(), 16, false);
  auto req = decode_resolve_request(r.bytes());
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_EQ(req->port_num, 2);
}

TEST(LsRequest, SkipsAnUnknownAttributeThatIsNotMandatory) {
  auto r = iser_request();
  uint32_t v = 1;
  r.attr(30, &v, 4, false);
  EXPECT_TRUE(decode_resolve_request(r.bytes()));
}

TEST(LsRequest, IgnoresBytesPastNlmsgLen) {
  auto bytes = iser_request().bytes();
  bytes.resize(bytes.size() + 12, 0xAB);
  EXPECT_TRUE(decode_resolve_request(bytes));
}

TEST(LsRequest, EncoderBuildsTheSameBytesAsTheKernelLayout) {
  ResolveRequest r;
  r.seq = 77;
  r.device = "mlx5_0";
  r.port_num = 1;
  r.path_use = PathUse::kAll;
  r.service_id = 0x0000000001060CBCULL;
  r.dgid = gid(kIbDgid);
  r.sgid = gid(kIbSgid);
  r.tclass = 0x68;
  r.pkey = 0xffff;
  r.qos_class = 7;
  EXPECT_EQ(encode_resolve_request(r), iser_request().bytes());
}

// Each malformed request is refused with a reason naming what is wrong.
struct Malformed {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* reason;  // a substring of the error message
};

std::vector<Malformed> malformed_cases() {
  std::vector<Malformed> c;
  c.push_back({"ShorterThanHeader", {1, 2, 3}, "shorter than a netlink header"});
  c.push_back({"LengthBeyondBuffer", iser_request().bytes(8), "does not fit"});
  c.push_back(
      {"NotResolve",
       RequestBytes(1, "d", 1, 0, 0x1002).gid(kAttrDgid, kIbDgid).gid(kAttrSgid, kIbSgid).bytes(),
       "is not RESOLVE"});
  c.push_back({"NoRequestFlag",
               RequestBytes(1, "d", 1, 0, 0x1000, 0)
                   .gid(kAttrDgid, kIbDgid)
                   .gid(kAttrSgid, kIbSgid)
                   .bytes(),
               "NLM_F_REQUEST"});
  {
    std::vector<uint8_t> b;
    append_u32(b, 16 + 10);
    append_u16(b, 0x1000);
    append_u16(b, 1);
    append_u32(b, 1);
    append_u32(b, 0);
    b.resize(b.size() + 10, 0);
    c.push_back({"NoResolveHeader", b, "no room"});
  }
  c.push_back({"DeviceNameNotTerminated",
               RequestBytes(1, std::string(64, 'x'), 1, 0)
                   .gid(kAttrDgid, kIbDgid)
                   .gid(kAttrSgid, kIbSgid)
                   .bytes(),
               "NUL"});
  c.push_back({"EmptyDeviceName",
               RequestBytes(1, "", 1, 0).gid(kAttrDgid, kIbDgid).gid(kAttrSgid, kIbSgid).bytes(),
               "empty"});
  c.push_back({"PortZero",
               RequestBytes(1, "d", 0, 0).gid(kAttrDgid, kIbDgid).gid(kAttrSgid, kIbSgid).bytes(),
               "port_num 0"});
  c.push_back({"PathUseOutOfRange",
               RequestBytes(1, "d", 1, 3).gid(kAttrDgid, kIbDgid).gid(kAttrSgid, kIbSgid).bytes(),
               "path_use 3"});
  {
    uint32_t sid = 5;
    c.push_back({"ShortServiceId",
                 RequestBytes(1, "d", 1, 0)
                     .attr(kAttrServiceId, &sid, 4)
                     .gid(kAttrDgid, kIbDgid)
                     .gid(kAttrSgid, kIbSgid)
                     .bytes(),
                 "SERVICE_ID has 4 byte(s), not 8"});
  }
  c.push_back({"ShortGid",
               RequestBytes(1, "d", 1, 0)
                   .attr(kAttrDgid, kIbDgid.data(), 8)
                   .gid(kAttrSgid, kIbSgid)
                   .bytes(),
               "DGID has 8 byte(s), not 16"});
  c.push_back({"QosClassWiderThan12Bits",
               RequestBytes(1, "d", 1, 0)
                   .gid(kAttrDgid, kIbDgid)
                   .gid(kAttrSgid, kIbSgid)
                   .u16(kAttrQosClass, 0x1000)
                   .bytes(),
               "12 bits"});
  c.push_back({"DuplicateSgid",
               RequestBytes(1, "d", 1, 0)
                   .gid(kAttrDgid, kIbDgid)
                   .gid(kAttrSgid, kIbSgid)
                   .gid(kAttrSgid, kIbSgid)
                   .bytes(),
               "SGID appears twice"});
  c.push_back(
      {"MissingDgid", RequestBytes(1, "d", 1, 0).gid(kAttrSgid, kIbSgid).bytes(), "no DGID"});
  c.push_back(
      {"MissingSgid", RequestBytes(1, "d", 1, 0).gid(kAttrDgid, kIbDgid).bytes(), "no SGID"});
  {
    uint32_t v = 1;
    c.push_back({"UnknownMandatoryAttribute",
                 RequestBytes(1, "d", 1, 0)
                     .gid(kAttrDgid, kIbDgid)
                     .gid(kAttrSgid, kIbSgid)
                     .attr(30, &v, 4)
                     .bytes(),
                 "mandatory attribute 30"});
    c.push_back({"MandatoryIpv4InResolve",
                 RequestBytes(1, "d", 1, 0)
                     .gid(kAttrDgid, kIbDgid)
                     .gid(kAttrSgid, kIbSgid)
                     .attr(kAttrIpv4, &v, 4)
                     .bytes(),
                 "IPV4"});
  }
  {
    // nla_len claims more than the message holds.
    std::vector<uint8_t> a;
    append_u16(a, 200);
    append_u16(a, 0x2000 | kAttrDgid);
    a.resize(a.size() + 16, 0);
    c.push_back({"AttributeOverrunsMessage",
                 RequestBytes(1, "d", 1, 0).gid(kAttrSgid, kIbSgid).raw(a).bytes(), "trailing"});
  }
  {
    std::vector<uint8_t> a;
    append_u16(a, 2);  // shorter than an attribute header
    append_u16(a, 0x2000 | kAttrDgid);
    c.push_back({"AttributeLengthBelowHeader",
                 RequestBytes(1, "d", 1, 0).gid(kAttrSgid, kIbSgid).raw(a).bytes(), "trailing"});
  }
  c.push_back({"TrailingBytes",
               RequestBytes(1, "d", 1, 0)
                   .gid(kAttrDgid, kIbDgid)
                   .gid(kAttrSgid, kIbSgid)
                   .raw({0, 0})
                   .bytes(),
               "trailing"});
  return c;
}

class LsMalformedRequest : public ::testing::TestWithParam<Malformed> {};

TEST_P(LsMalformedRequest, IsRefusedWithAReason) {
  auto req = decode_resolve_request(GetParam().bytes);
  ASSERT_FALSE(req);
  EXPECT_NE(req.error().message.find(GetParam().reason), std::string::npos) << req.error().message;
}

INSTANTIATE_TEST_SUITE_P(Cases, LsMalformedRequest, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(LsRequest, PeekHeaderGivesTheSeqOfAnUndecodableRequest) {
  auto h = peek_header(RequestBytes(4242, "d", 0, 9).bytes());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->seq, 4242u);
  EXPECT_EQ(h->type, 0x1000);
  EXPECT_FALSE(peek_header(std::vector<uint8_t>(15, 0)));
}

sa::PathRecord sample_record() {
  sa::PathRecord p;
  p.service_id = 0x0000000001060CBCULL;
  p.dgid = gid(kIbDgid);
  p.sgid = gid(kIbSgid);
  p.dlid = 3;
  p.slid = 2;
  p.hop_limit = 0;
  p.tclass = 0x68;
  p.reversible = true;
  p.numb_path = 1;
  p.pkey = 0xffff;
  p.qos_class = 7;
  p.sl = 5;
  p.mtu_selector = sa::Selector::kExactly;
  p.mtu = 3;
  p.rate_selector = sa::Selector::kExactly;
  p.rate = 5;
  p.packet_life_selector = sa::Selector::kExactly;
  p.packet_life = 12;
  return p;
}

TEST(LsReply, OnePathRecordFieldByField) {
  std::vector<ReplyPath> paths = {{0x2B, sample_record()}};
  auto bytes = encode_resolve_reply(77, paths);
  ASSERT_TRUE(bytes) << bytes.error().message;
  const auto& b = *bytes;
  ASSERT_EQ(b.size(), 16u + 4 + 72);
  EXPECT_EQ(read_u32(b, 0), b.size());  // nlmsg_len
  EXPECT_EQ(read_u16(b, 4), 0x1000);    // RESOLVE
  EXPECT_EQ(read_u16(b, 6), 0);         // no NLM_F_REQUEST, no F_ERR
  EXPECT_EQ(read_u32(b, 8), 77u);       // the request's seq
  // No family header: the attribute starts right after nlmsghdr.
  EXPECT_EQ(read_u16(b, 16), 4 + 72);  // nla_len
  EXPECT_EQ(read_u16(b, 18), 1);       // exactly LS_NLA_TYPE_PATH_RECORD, no flag bits
  EXPECT_EQ(read_u32(b, 20), 0x2Bu);   // ib_path_rec_data.flags, host order
  EXPECT_EQ(read_u32(b, 24), 0u);      // reserved
  const size_t pr = 28;                // the 64-byte wire PathRecord
  EXPECT_EQ(read_be64(b, pr + 0), 0x0000000001060CBCULL);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 8, b.begin() + pr + 24), kIbDgid);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 24, b.begin() + pr + 40), kIbSgid);
  EXPECT_EQ(read_be16(b, pr + 40), 3);  // DLID
  EXPECT_EQ(read_be16(b, pr + 42), 2);  // SLID
  EXPECT_EQ(b[pr + 48], 0x68);          // TClass
  EXPECT_EQ(b[pr + 49], 0x81);          // Reversible | NumbPath 1
  EXPECT_EQ(read_be16(b, pr + 50), 0xffff);
  // QoS class 7 in bits 15:4, SL 5 in bits 3:0.
  EXPECT_EQ(read_be16(b, pr + 52), 0x0075);
  EXPECT_EQ(b[pr + 54], 0x83);  // exactly 1024
  EXPECT_EQ(b[pr + 55], 0x85);  // exactly rate 5
  EXPECT_EQ(b[pr + 56], 0x8C);  // exactly 12
}

TEST(LsReply, ThreeRecordsForGmpInboundAndOutbound) {
  auto in = sample_record();
  in.sl = 1;
  auto out = sample_record();
  out.sl = 2;
  std::vector<ReplyPath> paths = {
      {path_flags::kPrimary | path_flags::kGmp | path_flags::kBidirectional, sample_record()},
      {path_flags::kPrimary | path_flags::kInbound, in},
      {path_flags::kPrimary | path_flags::kOutbound, out}};
  auto bytes = encode_resolve_reply(9, paths);
  ASSERT_TRUE(bytes);
  const auto& b = *bytes;
  ASSERT_EQ(b.size(), 16u + 3 * 76);
  EXPECT_EQ(read_u32(b, 16 + 4), 0x2Bu);
  EXPECT_EQ(read_u32(b, 16 + 76 + 4), 0x12u);
  EXPECT_EQ(read_u32(b, 16 + 152 + 4), 0x0Au);
  EXPECT_EQ(read_be16(b, 16 + 76 + 12 + 52) & 0xF, 1);
  EXPECT_EQ(read_be16(b, 16 + 152 + 12 + 52) & 0xF, 2);
  auto decoded = decode_resolve_reply(b);
  ASSERT_TRUE(decoded);
  ASSERT_EQ(decoded->paths.size(), 3u);
  EXPECT_EQ(decoded->paths[2].record, out);
}

TEST(LsReply, RecordThatDoesNotFitIsAnError) {
  auto p = sample_record();
  p.qos_class = 0x1000;
  std::vector<ReplyPath> paths = {{0x2B, p}};
  EXPECT_FALSE(encode_resolve_reply(1, paths));
}

TEST(LsReply, ErrorReplyCarriesFErrAndTheSeq) {
  auto b = encode_error_reply(31337);
  ASSERT_EQ(b.size(), 16u);
  EXPECT_EQ(read_u32(b, 0), 16u);
  EXPECT_EQ(read_u16(b, 4), 0x1000);
  EXPECT_EQ(read_u16(b, 6), 0x0100);  // RDMA_NL_LS_F_ERR, no NLM_F_REQUEST
  EXPECT_EQ(read_u32(b, 8), 31337u);
}

TEST(LsReply, SetTimeoutIsARequestWithAHostOrderTimeout) {
  auto b = encode_set_timeout(1, 4200);
  ASSERT_EQ(b.size(), 24u);
  EXPECT_EQ(read_u16(b, 4), 0x1001);
  // NLM_F_REQUEST (the kernel refuses it otherwise) | NLM_F_ACK (so it says it accepted).
  EXPECT_EQ(read_u16(b, 6), 0x0005);
  EXPECT_EQ(read_u16(b, 16), 8);
  EXPECT_EQ(read_u16(b, 18), kAttrTimeout);
  EXPECT_EQ(read_u32(b, 20), 4200u);
  EXPECT_EQ(decode_set_timeout(b).value(), 4200u);
}

TEST(LsAck, AcceptedSetTimeoutIsErrorZeroForItsSeqAndType) {
  // An ACK carries only the answered message's header.
  auto ack = decode_ack(ack_bytes(9, 0, 0x1001, 0x0005, 24));
  ASSERT_TRUE(ack) << ack.error().message;
  EXPECT_EQ(ack->seq, 9u);
  EXPECT_EQ(ack->error, 0);
  EXPECT_EQ(ack->acked_type, 0x1001);
}

TEST(LsAck, RefusalCarriesTheNegativeErrnoAndTheMessageItRefused) {
  // An error carries the refused message's payload too (here SET_TIMEOUT's attribute).
  std::vector<uint8_t> payload;
  append_u16(payload, 8);
  append_u16(payload, kAttrTimeout);
  append_u32(payload, 4180);
  auto ack = decode_ack(ack_bytes(1, -22 /* EINVAL */, 0x1001, 0x0005, 24, payload));
  ASSERT_TRUE(ack) << ack.error().message;
  EXPECT_EQ(ack->seq, 1u);
  EXPECT_EQ(ack->error, -22);
  EXPECT_EQ(ack->acked_type, 0x1001);
  // A refused reply to RESOLVE request 1 differs only by the type.
  EXPECT_EQ(decode_ack(ack_bytes(1, -1 /* EPERM */, 0x1000, 0, 16)).value().acked_type, 0x1000);
}

TEST(LsAck, RefusesWhatIsNoAck) {
  auto cut = ack_bytes(1, 0, 0x1001, 5, 24);
  cut.resize(16 + 4 + 8);
  cut[0] = static_cast<uint8_t>(cut.size());
  auto truncated = decode_ack(cut);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("nlmsgerr"), std::string::npos);
  auto not_ack = decode_ack(encode_error_reply(1));
  ASSERT_FALSE(not_ack);
  EXPECT_NE(not_ack.error().message.find("not NLMSG_ERROR"), std::string::npos);
}

ResolveRequest request_for(PathUse use) {
  ResolveRequest r;
  r.path_use = use;
  return r;
}

TEST(LsPaths, UnidirectionalGetsPrimaryOutbound) {
  std::vector<sa::PathRecord> records = {sample_record()};
  auto p = reply_paths(request_for(PathUse::kUnidirectional), records);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].flags, 0x02u | 0x08u);
}

TEST(LsPaths, GmpGetsOnlyPrimaryGmpBidirectional) {
  std::vector<sa::PathRecord> records = {sample_record()};
  std::vector<sa::PathRecord> reverse = {sample_record()};
  auto p = reply_paths(request_for(PathUse::kGmp), records, reverse);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].flags, 0x01u | 0x02u | 0x08u | 0x20u);
  EXPECT_TRUE(reply_paths(request_for(PathUse::kGmp), {}).empty());
}

// The reverse path as the SA answers it: DGID -> SGID, so SLID and DLID swapped, and here its
// own SL (an asymmetric fabric).
sa::PathRecord reverse_record() {
  auto r = sample_record();
  std::swap(r.sgid, r.dgid);
  std::swap(r.slid, r.dlid);
  r.sl = 6;
  r.reversible = false;
  return r;
}

TEST(LsPaths, AllGetsGmpThenOutboundThenInbound) {
  std::vector<sa::PathRecord> records = {sample_record()};
  std::vector<sa::PathRecord> reverse = {reverse_record()};
  auto p = reply_paths(request_for(PathUse::kAll), records, reverse);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].flags, 0x01u | 0x02u | 0x08u | 0x20u);  // GMP|PRIMARY|OUTBOUND|INBOUND_REVERSE
  EXPECT_EQ(p[1].flags, 0x02u | 0x08u);                  // PRIMARY|OUTBOUND
  EXPECT_EQ(p[2].flags, 0x02u | 0x10u);                  // PRIMARY|INBOUND
  EXPECT_EQ(p[0].record, sample_record());
  EXPECT_EQ(p[1].record, sample_record());  // the forward path
  EXPECT_EQ(p[2].record, reverse_record());
  EXPECT_EQ(p[2].record.slid, 3);
  EXPECT_EQ(p[2].record.dlid, 2);
  EXPECT_EQ(p[2].record.sl, 6);
}

TEST(LsPaths, EveryKernelFindsTheGmpRecordAndOnlyThatOne) {
  std::vector<sa::PathRecord> records = {sample_record()};
  std::vector<sa::PathRecord> reverse = {reverse_record()};
  auto p = reply_paths(request_for(PathUse::kAll), records, reverse);
  ASSERT_EQ(p.size(), 3u);
  // Before 6.1: the first record holding all of PRIMARY|GMP|BIDIRECTIONAL; only the first does.
  const uint32_t pre61 = 0x01 | 0x02 | 0x08 | 0x20;
  EXPECT_EQ(p[0].flags & pre61, pre61);
  EXPECT_NE(p[1].flags & pre61, pre61);
  EXPECT_NE(p[2].flags & pre61, pre61);
  // 6.1+: at most 3 records, each PRIMARY; GMP only on the route's path, the per-direction
  // ones tell INBOUND from OUTBOUND without overlap.
  for (const auto& r : p) EXPECT_TRUE(r.flags & path_flags::kPrimary);
  EXPECT_FALSE(p[1].flags & path_flags::kGmp);
  EXPECT_FALSE(p[2].flags & path_flags::kGmp);
  EXPECT_FALSE(p[1].flags & path_flags::kInbound);
  EXPECT_FALSE(p[2].flags & (path_flags::kOutbound | path_flags::kInboundReverse));
  EXPECT_FALSE((p[0].flags | p[1].flags | p[2].flags) & path_flags::kAlternate);
}

TEST(LsPaths, AllWithoutAReversePathKeepsGmpAndOutbound) {
  std::vector<sa::PathRecord> records = {sample_record()};
  auto p = reply_paths(request_for(PathUse::kAll), records);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].flags, 0x2Bu);
  EXPECT_EQ(p[1].flags, 0x0Au);
  EXPECT_TRUE(reply_paths(request_for(PathUse::kAll), {}, records).empty());
}

TEST(LsReply, AllReplyLayoutFieldByField) {
  std::vector<sa::PathRecord> records = {sample_record()};
  std::vector<sa::PathRecord> reverse = {reverse_record()};
  auto paths = reply_paths(request_for(PathUse::kAll), records, reverse);
  auto bytes = encode_resolve_reply(41, paths);
  ASSERT_TRUE(bytes) << bytes.error().message;
  const auto& b = *bytes;
  ASSERT_EQ(b.size(), 16u + 3 * 76);
  EXPECT_EQ(read_u32(b, 0), b.size());
  EXPECT_EQ(read_u16(b, 6), 0);
  EXPECT_EQ(read_u32(b, 8), 41u);
  const uint32_t flags[3] = {0x2B, 0x0A, 0x12};
  for (size_t k = 0; k < 3; ++k) {
    const size_t a = 16 + 76 * k;
    EXPECT_EQ(read_u16(b, a), 76) << k;     // nla_len
    EXPECT_EQ(read_u16(b, a + 2), 1) << k;  // LS_NLA_TYPE_PATH_RECORD
    EXPECT_EQ(read_u32(b, a + 4), flags[k]) << k;
    EXPECT_EQ(read_u32(b, a + 8), 0u) << k;  // reserved
  }
  const size_t gmp = 16 + 12, out = 16 + 76 + 12, in = 16 + 152 + 12;
  for (size_t pr : {gmp, out}) {
    EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 8, b.begin() + pr + 24), kIbDgid);
    EXPECT_EQ(std::vector<uint8_t>(b.begin() + pr + 24, b.begin() + pr + 40), kIbSgid);
    EXPECT_EQ(read_be16(b, pr + 40), 3);  // DLID
    EXPECT_EQ(read_be16(b, pr + 42), 2);  // SLID
    EXPECT_EQ(read_be16(b, pr + 52), 0x0075);
  }
  // INBOUND: the reverse path, GIDs and LIDs swapped, its own SL, the same Service-ID.
  EXPECT_EQ(read_be64(b, in + 0), 0x0000000001060CBCULL);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + in + 8, b.begin() + in + 24), kIbSgid);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + in + 24, b.begin() + in + 40), kIbDgid);
  EXPECT_EQ(read_be16(b, in + 40), 2);  // DLID: this port
  EXPECT_EQ(read_be16(b, in + 42), 3);  // SLID: the remote port
  EXPECT_EQ(b[in + 49], 0x01);          // not Reversible, NumbPath 1
  EXPECT_EQ(read_be16(b, in + 52), 0x0076);
}

TEST(LsPaths, RequestQosClassAndServiceIdFillWhatTheSaLeftOut) {
  auto sa_answer = sample_record();
  sa_answer.qos_class = 0;
  sa_answer.service_id = 0;
  auto req = request_for(PathUse::kAll);
  req.qos_class = 7;
  req.service_id = 0x1060CBC;
  std::vector<sa::PathRecord> records = {sa_answer};
  std::vector<sa::PathRecord> reverse = {sa_answer};
  auto p = reply_paths(req, records, reverse);
  ASSERT_EQ(p.size(), 3u);
  for (const auto& r : p) {
    EXPECT_EQ(r.record.qos_class, 7);
    EXPECT_EQ(r.record.service_id, 0x1060CBCu);
    EXPECT_EQ(r.record.sl, 5);
  }
}

TEST(LsQuery, CarriesServiceIdQosClassAndTheRestToTheSa) {
  auto req = decode_resolve_request(iser_request().bytes());
  ASSERT_TRUE(req);
  auto q = to_path_query(*req);
  EXPECT_EQ(q.record.service_id, 0x0000000001060CBCULL);
  EXPECT_EQ(q.record.qos_class, 7);
  EXPECT_EQ(q.record.tclass, 0x68);
  EXPECT_EQ(q.record.pkey, 0xffff);
  EXPECT_TRUE(q.record.reversible);
  EXPECT_EQ(q.record.numb_path, 1);
  // ServiceID both halves (0,1), DGID 2, SGID 3, TClass 10, Reversible 11, NumbPath 12,
  // PKey 13, QoSClass 14.
  EXPECT_EQ(q.comp_mask,
            0x3ULL | 1 << 2 | 1 << 3 | 1 << 10 | 1 << 11 | 1 << 12 | 1 << 13 | 1 << 14);
}

TEST(LsQuery, UnidirectionalAsksNoReversiblePath) {
  RequestBytes r(5, "rxe0", 1, 1);
  r.gid(kAttrDgid, kIbDgid).gid(kAttrSgid, kIbSgid);
  auto q = to_path_query(*decode_resolve_request(r.bytes()));
  EXPECT_EQ(q.comp_mask, 1ULL << 2 | 1 << 3 | 1 << 12);
}

TEST(LsQuery, AllAsksTheReversePathWithTheSameServiceIdAndQosClass) {
  auto req = decode_resolve_request(iser_request().bytes());
  ASSERT_TRUE(req);
  auto q = to_reverse_path_query(*req);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->record.sgid, gid(kIbDgid));
  EXPECT_EQ(q->record.dgid, gid(kIbSgid));
  EXPECT_EQ(q->record.service_id, 0x0000000001060CBCULL);
  EXPECT_EQ(q->record.qos_class, 7);
  EXPECT_EQ(q->record.tclass, 0x68);
  EXPECT_EQ(q->record.pkey, 0xffff);
  EXPECT_FALSE(q->record.reversible);
  EXPECT_EQ(q->record.numb_path, 1);
  EXPECT_EQ(q->comp_mask, 0x3ULL | 1 << 2 | 1 << 3 | 1 << 10 | 1 << 12 | 1 << 13 | 1 << 14);
}

TEST(LsQuery, OnlyAllAsksAReversePath) {
  for (uint8_t use : {1, 2}) {
    auto req = decode_resolve_request(iser_request(use).bytes());
    ASSERT_TRUE(req);
    EXPECT_FALSE(to_reverse_path_query(*req)) << int(use);
  }
}

TEST(LsTiming, StaysUnderTheKernelsMaximumTimeout) {
  LsdOptions o;
  o.sa.timeout = std::chrono::milliseconds(60000);
  o.sa.retries = 10;
  EXPECT_LE(kernel_timeout(o), std::chrono::milliseconds(200000));
  EXPECT_LT(answer_budget(o), kernel_timeout(o));
}

TEST(LsTiming, RefusedSetTimeoutCapsTheBudgetInsideTheKernelsDefault) {
  LsdOptions o;
  o.sa.timeout = std::chrono::milliseconds(1000);
  o.sa.retries = 2;
  o.sa.backoff = std::chrono::milliseconds(10);
  EXPECT_EQ(kKernelDefaultTimeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(refused_answer_budget(o), std::chrono::milliseconds(1500));
  // A budget that fits already stays: 300 ms x 2 + 10 ms x 4 + 100 ms.
  o.sa.timeout = std::chrono::milliseconds(300);
  o.sa.retries = 1;
  EXPECT_EQ(refused_answer_budget(o), std::chrono::milliseconds(740));
}

TEST(LsTiming, ErrorAnswerComesBeforeTheKernelTimeout) {
  LsdOptions o;
  o.sa.timeout = std::chrono::milliseconds(1000);
  o.sa.retries = 2;
  o.sa.backoff = std::chrono::milliseconds(10);
  EXPECT_GE(answer_budget(o), std::chrono::milliseconds(3000));
  EXPECT_GE(kernel_timeout(o) - answer_budget(o), std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace rdmaqos::kmod
