// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Codecs of the kernel's local-service netlink messages, built and walked with libnl-3. libnl's
// nla_parse is not used on requests: it drops attributes whose type carries the RDMA MANDATORY
// flag, which the kernel sets on every one.
#include "rdma-qos/kmod-shim/ls_codec.h"

#include <fmt/format.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>

#include <cstring>
#include <memory>

namespace rdmaqos::kmod {

using rdmaqos::ErrorCode;
using rdmaqos::make_error;

static_assert(kResolveType == RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE));
static_assert(kSetTimeoutType == RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_SET_TIMEOUT));
static_assert(kFlagErr == RDMA_NL_LS_F_ERR);
static_assert(kGroupLs == RDMA_NL_GROUP_LS);
static_assert(path_flags::kBidirectional == IB_PATH_BIDIRECTIONAL);
static_assert(sizeof(ib_path_rec_data) == 8 + sa::kPathRecordSize);

namespace {

// The family header occupies NLMSG_ALIGN(66) bytes before the attributes (sa_query.c).
constexpr size_t kResolveHeaderSpace = NLMSG_ALIGN(sizeof(rdma_ls_resolve_header));

struct MsgDeleter {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

MsgPtr new_message(uint16_t type, uint16_t flags, uint32_t seq) {
  MsgPtr msg(nlmsg_alloc_simple(type, flags));
  if (!msg) throw std::bad_alloc();
  nlmsg_hdr(msg.get())->nlmsg_seq = seq;
  return msg;
}

std::vector<uint8_t> bytes_of(nl_msg* msg) {
  const nlmsghdr* h = nlmsg_hdr(msg);
  const auto* p = reinterpret_cast<const uint8_t*>(h);
  return std::vector<uint8_t>(p, p + h->nlmsg_len);
}

void put(nl_msg* msg, int type, const void* data, size_t len) {
  if (nla_put(msg, type, static_cast<int>(len), data) < 0) throw std::bad_alloc();
}

// An aligned private copy of one message, so libnl's accessors read aligned structs whatever
// buffer the bytes came in.
class AlignedMessage {
 public:
  static Result<AlignedMessage> from(std::span<const uint8_t> bytes) {
    if (bytes.size() < NLMSG_HDRLEN)
      return make_error(ErrorCode::kTruncated,
                        fmt::format("{} bytes: shorter than a netlink header", bytes.size()));
    AlignedMessage m;
    m.words_.resize((bytes.size() + 3) / 4);
    std::memcpy(m.words_.data(), bytes.data(), bytes.size());
    if (!nlmsg_ok(m.header(), static_cast<int>(bytes.size())))
      return make_error(ErrorCode::kMalformed,
                        fmt::format("nlmsg_len {} does not fit the {} bytes received",
                                    m.header()->nlmsg_len, bytes.size()));
    return m;
  }
  nlmsghdr* header() { return reinterpret_cast<nlmsghdr*>(words_.data()); }

 private:
  std::vector<uint32_t> words_;
};

MessageHeader header_of(const nlmsghdr* h) {
  return MessageHeader{h->nlmsg_len, h->nlmsg_type, h->nlmsg_flags, h->nlmsg_seq, h->nlmsg_pid};
}

const char* attribute_name(int type) {
  switch (type) {
    case LS_NLA_TYPE_PATH_RECORD: return "PATH_RECORD";
    case LS_NLA_TYPE_TIMEOUT: return "TIMEOUT";
    case LS_NLA_TYPE_SERVICE_ID: return "SERVICE_ID";
    case LS_NLA_TYPE_DGID: return "DGID";
    case LS_NLA_TYPE_SGID: return "SGID";
    case LS_NLA_TYPE_TCLASS: return "TCLASS";
    case LS_NLA_TYPE_PKEY: return "PKEY";
    case LS_NLA_TYPE_QOS_CLASS: return "QOS_CLASS";
    case LS_NLA_TYPE_IPV4: return "IPV4";
    case LS_NLA_TYPE_IPV6: return "IPV6";
    default: return "unknown";
  }
}

// Attributes walked by hand (nla_for_each_attr) with the RDMA flag bits masked.
template <typename Visit>
Result<rdmaqos::Ok> walk_attributes(nlattr* head, int len, Visit visit) {
  nlattr* a;
  int rem;
  nla_for_each_attr(a, head, len, rem) {
    auto r = visit(a, static_cast<int>(a->nla_type & RDMA_NLA_TYPE_MASK),
                   (a->nla_type & RDMA_NLA_F_MANDATORY) != 0);
    if (!r) return r;
  }
  // The kernel pads every attribute; a negative remainder is only a missing final pad.
  if (rem > 0)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("{} trailing byte(s) after the last attribute", rem));
  return rdmaqos::Ok{};
}

template <typename T>
T read_host(const nlattr* a) {
  T v;
  std::memcpy(&v, nla_data(a), sizeof v);
  return v;
}

}  // namespace

std::optional<MessageHeader> peek_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < NLMSG_HDRLEN) return std::nullopt;
  nlmsghdr h;
  std::memcpy(&h, bytes.data(), sizeof h);
  return header_of(&h);
}

Result<ResolveRequest> decode_resolve_request(std::span<const uint8_t> message) {
  auto m = AlignedMessage::from(message);
  if (!m) return m.error();
  nlmsghdr* h = m->header();
  if (h->nlmsg_type != kResolveType)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("message type 0x{:04x} is not RESOLVE (0x{:04x})", h->nlmsg_type,
                                  kResolveType));
  if (!(h->nlmsg_flags & NLM_F_REQUEST))
    return make_error(ErrorCode::kMalformed,
                      "RESOLVE without NLM_F_REQUEST (a reply, not a query)");
  const int payload = nlmsg_datalen(h);
  if (payload < static_cast<int>(sizeof(rdma_ls_resolve_header)))
    return make_error(ErrorCode::kTruncated,
                      fmt::format("payload of {} bytes has no room for the {}-byte resolve header",
                                  payload, sizeof(rdma_ls_resolve_header)));
  rdma_ls_resolve_header rh;
  std::memcpy(&rh, nlmsg_data(h), sizeof rh);

  ResolveRequest req;
  req.seq = h->nlmsg_seq;
  const void* nul = std::memchr(rh.device_name, 0, sizeof rh.device_name);
  if (!nul) return make_error(ErrorCode::kMalformed, "device_name is not NUL-terminated");
  req.device.assign(reinterpret_cast<const char*>(rh.device_name),
                    static_cast<const uint8_t*>(nul) - rh.device_name);
  if (req.device.empty()) return make_error(ErrorCode::kMalformed, "device_name is empty");
  if (rh.port_num == 0) return make_error(ErrorCode::kMalformed, "port_num 0 (ports start at 1)");
  req.port_num = rh.port_num;
  if (rh.path_use >= LS_RESOLVE_PATH_USE_MAX)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("path_use {} is not ALL, UNIDIRECTIONAL or GMP", rh.path_use));
  req.path_use = static_cast<PathUse>(rh.path_use);

  int attr_len = payload - static_cast<int>(kResolveHeaderSpace);
  if (attr_len < 0) attr_len = 0;  // a header without its alignment padding and no attribute
  auto* head =
      reinterpret_cast<nlattr*>(static_cast<uint8_t*>(nlmsg_data(h)) + kResolveHeaderSpace);
  auto walked = walk_attributes(head, attr_len, [&](nlattr* a, int type, bool mandatory) {
    const int len = nla_len(a);
    auto want = [&](int size) -> std::optional<rdmaqos::Error> {
      if (len == size) return std::nullopt;
      return make_error(ErrorCode::kMalformed, fmt::format("attribute {} has {} byte(s), not {}",
                                                           attribute_name(type), len, size));
    };
    auto dup = [&](bool present) -> std::optional<rdmaqos::Error> {
      if (!present) return std::nullopt;
      return make_error(ErrorCode::kMalformed,
                        fmt::format("attribute {} appears twice", attribute_name(type)));
    };
    std::optional<rdmaqos::Error> bad;
    switch (type) {
      case LS_NLA_TYPE_SERVICE_ID:
        if ((bad = dup(req.service_id.has_value())) || (bad = want(8))) break;
        req.service_id = read_host<uint64_t>(a);
        break;
      case LS_NLA_TYPE_DGID:
      case LS_NLA_TYPE_SGID: {
        auto& gid = type == LS_NLA_TYPE_DGID ? req.dgid : req.sgid;
        if ((bad = dup(gid.has_value())) || (bad = want(16))) break;
        sa::Gid g;
        std::memcpy(g.data(), nla_data(a), g.size());
        gid = g;
        break;
      }
      case LS_NLA_TYPE_TCLASS:
        if ((bad = dup(req.tclass.has_value())) || (bad = want(1))) break;
        req.tclass = read_host<uint8_t>(a);
        break;
      case LS_NLA_TYPE_PKEY:
        if ((bad = dup(req.pkey.has_value())) || (bad = want(2))) break;
        req.pkey = read_host<uint16_t>(a);
        break;
      case LS_NLA_TYPE_QOS_CLASS: {
        if ((bad = dup(req.qos_class.has_value())) || (bad = want(2))) break;
        auto q = read_host<uint16_t>(a);
        if (q > 0xFFF) {
          bad = make_error(ErrorCode::kMalformed,
                           fmt::format("QOS_CLASS {:#x} does not fit in 12 bits", q));
          break;
        }
        req.qos_class = q;
        break;
      }
      default:
        // Known attributes of other operations and unknown ones alike: fine to skip unless the
        // kernel marked them as needed for the answer.
        if (mandatory)
          bad = make_error(ErrorCode::kMalformed,
                           fmt::format("mandatory attribute {} ({}) is not understood in RESOLVE",
                                       type, attribute_name(type)));
        break;
    }
    if (bad) return Result<rdmaqos::Ok>(*bad);
    return Result<rdmaqos::Ok>(rdmaqos::Ok{});
  });
  if (!walked) return walked.error();
  if (!req.sgid) return make_error(ErrorCode::kMalformed, "no SGID attribute");
  if (!req.dgid) return make_error(ErrorCode::kMalformed, "no DGID attribute");
  return req;
}

Result<std::vector<uint8_t>> encode_resolve_reply(uint32_t seq, std::span<const ReplyPath> paths) {
  auto msg = new_message(kResolveType, 0, seq);
  for (const ReplyPath& p : paths) {
    auto wire = sa::encode_path_record(p.record);
    if (!wire) return wire.error();
    ib_path_rec_data data{};
    data.flags = p.flags;
    std::memcpy(data.path_rec, wire->data(), wire->size());
    put(msg.get(), LS_NLA_TYPE_PATH_RECORD, &data, sizeof data);
  }
  return bytes_of(msg.get());
}

std::vector<uint8_t> encode_error_reply(uint32_t seq) {
  return bytes_of(new_message(kResolveType, kFlagErr, seq).get());
}

std::vector<uint8_t> encode_set_timeout(uint32_t seq, uint32_t timeout_ms) {
  auto msg = new_message(kSetTimeoutType, NLM_F_REQUEST | NLM_F_ACK, seq);
  put(msg.get(), LS_NLA_TYPE_TIMEOUT, &timeout_ms, sizeof timeout_ms);
  return bytes_of(msg.get());
}

Result<DecodedReply> decode_resolve_reply(std::span<const uint8_t> message) {
  auto m = AlignedMessage::from(message);
  if (!m) return m.error();
  nlmsghdr* h = m->header();
  DecodedReply out;
  out.header = header_of(h);
  if (h->nlmsg_type != kResolveType)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("message type 0x{:04x} is not RESOLVE", h->nlmsg_type));
  out.error = (h->nlmsg_flags & kFlagErr) != 0;
  auto walked = walk_attributes(
      static_cast<nlattr*>(nlmsg_data(h)), nlmsg_datalen(h),
      [&](nlattr* a, int type, bool) -> Result<rdmaqos::Ok> {
        if (type != LS_NLA_TYPE_PATH_RECORD || a->nla_type != LS_NLA_TYPE_PATH_RECORD)
          return make_error(
              ErrorCode::kMalformed,
              fmt::format("reply attribute type 0x{:04x} is not PATH_RECORD", a->nla_type));
        if (nla_len(a) != static_cast<int>(sizeof(ib_path_rec_data)))
          return make_error(ErrorCode::kMalformed,
                            fmt::format("PATH_RECORD of {} bytes", nla_len(a)));
        ib_path_rec_data data;
        std::memcpy(&data, nla_data(a), sizeof data);
        auto rec = sa::decode_path_record(std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(data.path_rec), sa::kPathRecordSize));
        if (!rec) return rec.error();
        out.paths.push_back(ReplyPath{data.flags, *rec});
        return rdmaqos::Ok{};
      });
  if (!walked) return walked.error();
  return out;
}

Result<uint32_t> decode_set_timeout(std::span<const uint8_t> message) {
  auto m = AlignedMessage::from(message);
  if (!m) return m.error();
  nlmsghdr* h = m->header();
  if (h->nlmsg_type != kSetTimeoutType || !(h->nlmsg_flags & NLM_F_REQUEST))
    return make_error(ErrorCode::kMalformed, "not a SET_TIMEOUT request");
  std::optional<uint32_t> timeout;
  auto walked = walk_attributes(static_cast<nlattr*>(nlmsg_data(h)), nlmsg_datalen(h),
                                [&](nlattr* a, int, bool) -> Result<rdmaqos::Ok> {
                                  if (a->nla_type == LS_NLA_TYPE_TIMEOUT && nla_len(a) == 4)
                                    timeout = read_host<uint32_t>(a);
                                  return rdmaqos::Ok{};
                                });
  if (!walked) return walked.error();
  if (!timeout) return make_error(ErrorCode::kMalformed, "SET_TIMEOUT without TIMEOUT");
  return *timeout;
}

Result<NetlinkAck> decode_ack(std::span<const uint8_t> message) {
  auto m = AlignedMessage::from(message);
  if (!m) return m.error();
  nlmsghdr* h = m->header();
  if (h->nlmsg_type != NLMSG_ERROR)
    return make_error(ErrorCode::kMalformed,
                      fmt::format("message type {} is not NLMSG_ERROR", h->nlmsg_type));
  // The error and the header of the message it answers; the kernel may append that message's
  // payload (unless NLM_F_CAPPED) and extended-ack attributes, neither needed here.
  if (nlmsg_datalen(h) < static_cast<int>(sizeof(nlmsgerr)))
    return make_error(
        ErrorCode::kTruncated,
        fmt::format("NLMSG_ERROR of {} bytes has no room for struct nlmsgerr", h->nlmsg_len));
  nlmsgerr e;
  std::memcpy(&e, nlmsg_data(h), sizeof e);
  return NetlinkAck{e.msg.nlmsg_seq, e.error, e.msg.nlmsg_type};
}

std::vector<uint8_t> encode_resolve_request(const ResolveRequest& r) {
  auto msg = new_message(kResolveType, NLM_F_REQUEST, r.seq);
  rdma_ls_resolve_header rh{};
  std::memcpy(rh.device_name, r.device.data(),
              std::min(r.device.size(), sizeof rh.device_name - 1));
  rh.port_num = r.port_num;
  rh.path_use = static_cast<uint8_t>(r.path_use);
  if (nlmsg_append(msg.get(), &rh, sizeof rh, NLMSG_ALIGNTO) < 0) throw std::bad_alloc();
  constexpr int m = RDMA_NLA_F_MANDATORY;
  if (r.service_id) put(msg.get(), m | LS_NLA_TYPE_SERVICE_ID, &*r.service_id, 8);
  if (r.dgid) put(msg.get(), m | LS_NLA_TYPE_DGID, r.dgid->data(), 16);
  if (r.sgid) put(msg.get(), m | LS_NLA_TYPE_SGID, r.sgid->data(), 16);
  if (r.tclass) put(msg.get(), m | LS_NLA_TYPE_TCLASS, &*r.tclass, 1);
  if (r.pkey) put(msg.get(), m | LS_NLA_TYPE_PKEY, &*r.pkey, 2);
  if (r.qos_class) put(msg.get(), m | LS_NLA_TYPE_QOS_CLASS, &*r.qos_class, 2);
  return bytes_of(msg.get());
}

sa::PathQuery to_path_query(const ResolveRequest& r) {
  namespace mask = sa::pr_mask;
  sa::PathQuery q;
  q.get_table = false;
  q.record.sgid = r.sgid.value_or(sa::Gid{});
  q.record.dgid = r.dgid.value_or(sa::Gid{});
  q.comp_mask = mask::kSgid | mask::kDgid | mask::kNumbPath;
  q.record.numb_path = 1;
  if (r.path_use != PathUse::kUnidirectional) {
    q.record.reversible = true;
    q.comp_mask |= mask::kReversible;
  }
  if (r.service_id) {
    q.record.service_id = *r.service_id;
    q.comp_mask |= mask::kServiceId;
  }
  if (r.tclass) {
    q.record.tclass = *r.tclass;
    q.comp_mask |= mask::kTClass;
  }
  if (r.pkey) {
    q.record.pkey = *r.pkey;
    q.comp_mask |= mask::kPKey;
  }
  if (r.qos_class) {
    q.record.qos_class = *r.qos_class;
    q.comp_mask |= mask::kQosClass;
  }
  return q;
}

std::optional<sa::PathQuery> to_reverse_path_query(const ResolveRequest& r) {
  if (r.path_use != PathUse::kAll) return std::nullopt;
  ResolveRequest reverse = r;
  reverse.path_use = PathUse::kUnidirectional;  // one direction: no Reversible
  reverse.sgid = r.dgid;
  reverse.dgid = r.sgid;
  return to_path_query(reverse);
}

namespace {
sa::PathRecord filled(const ResolveRequest& request, sa::PathRecord record) {
  if (request.service_id && record.service_id == 0) record.service_id = *request.service_id;
  if (request.qos_class && record.qos_class == 0) record.qos_class = *request.qos_class;
  return record;
}
}  // namespace

std::vector<ReplyPath> reply_paths(const ResolveRequest& request,
                                   std::span<const sa::PathRecord> records,
                                   std::span<const sa::PathRecord> reverse) {
  namespace f = path_flags;
  if (records.empty()) return {};
  const sa::PathRecord forward = filled(request, records[0]);
  switch (request.path_use) {
    case PathUse::kUnidirectional: return {ReplyPath{f::kPrimary | f::kOutbound, forward}};
    case PathUse::kGmp: return {ReplyPath{f::kPrimary | f::kGmp | f::kBidirectional, forward}};
    case PathUse::kAll: break;
  }
  std::vector<ReplyPath> out = {ReplyPath{f::kPrimary | f::kGmp | f::kBidirectional, forward},
                                ReplyPath{f::kPrimary | f::kOutbound, forward}};
  if (!reverse.empty())
    out.push_back(ReplyPath{f::kPrimary | f::kInbound, filled(request, reverse[0])});
  return out;
}

}  // namespace rdmaqos::kmod
