// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Byte images of local-service netlink messages built field by field from the uapi layouts
// (linux/netlink.h, rdma/rdma_netlink.h), the way the kernel's sa_query.c lays out a RESOLVE
// request: nlmsghdr, the 66-byte resolve header padded to 68, then 4-byte-aligned attributes
// whose types carry RDMA_NLA_F_MANDATORY. Independent of the codec under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace rdmaqos::kmod::testing {

inline void append_u16(std::vector<uint8_t>& b, uint16_t v) {
  uint8_t raw[2];
  std::memcpy(raw, &v, 2);  // host order, as the kernel writes nlmsghdr and nlattr
  for (uint8_t x : raw) b.push_back(x);
}
inline void append_u32(std::vector<uint8_t>& b, uint32_t v) {
  uint8_t raw[4];
  std::memcpy(raw, &v, 4);
  for (uint8_t x : raw) b.push_back(x);
}
inline void pad4(std::vector<uint8_t>& b) {
  while (b.size() % 4) b.push_back(0);
}

class RequestBytes {
 public:
  RequestBytes(uint32_t seq, const std::string& device, uint8_t port, uint8_t path_use,
               uint16_t type = 0x1000, uint16_t flags = 0x0001 /* NLM_F_REQUEST */)
      : seq_(seq), type_(type), flags_(flags) {
    // device_name[64], port_num, path_use, then padding to NLMSG_ALIGN(66) = 68.
    body_.assign(68, 0);
    for (size_t i = 0; i < device.size() && i < 64; ++i) body_[i] = static_cast<uint8_t>(device[i]);
    body_[64] = port;
    body_[65] = path_use;
  }
  // One attribute: nla_len = 4 + payload, type with the MANDATORY flag (0x2000) by default.
  RequestBytes& attr(uint16_t type, const void* data, size_t len, bool mandatory = true) {
    append_u16(body_, static_cast<uint16_t>(4 + len));
    append_u16(body_, static_cast<uint16_t>(type | (mandatory ? 0x2000 : 0)));
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < len; ++i) body_.push_back(p[i]);
    pad4(body_);
    return *this;
  }
  RequestBytes& u64(uint16_t type, uint64_t v) { return attr(type, &v, 8); }
  RequestBytes& u16(uint16_t type, uint16_t v) { return attr(type, &v, 2); }
  RequestBytes& u8(uint16_t type, uint8_t v) { return attr(type, &v, 1); }
  RequestBytes& gid(uint16_t type, const std::vector<uint8_t>& g) {
    return attr(type, g.data(), g.size());
  }
  RequestBytes& raw(const std::vector<uint8_t>& bytes) {
    for (uint8_t x : bytes) body_.push_back(x);
    return *this;
  }
  std::vector<uint8_t> bytes(int32_t length_delta = 0) const {
    std::vector<uint8_t> b;
    append_u32(b, static_cast<uint32_t>(16 + body_.size() + length_delta));
    append_u16(b, type_);
    append_u16(b, flags_);
    append_u32(b, seq_);
    append_u32(b, 0);  // nlmsg_pid: the kernel
    for (uint8_t x : body_) b.push_back(x);
    return b;
  }

 private:
  uint32_t seq_;
  uint16_t type_, flags_;
  std::vector<uint8_t> body_;
};

// The kernel's NLMSG_ERROR (type 2) answering a message of ours (netlink_ack): nlmsghdr with
// the answered seq, then struct nlmsgerr { int error; struct nlmsghdr msg; } holding the
// answered message's header, then (for an error, unless capped) that message's payload.
inline std::vector<uint8_t> ack_bytes(uint32_t seq, int32_t error, uint16_t acked_type,
                                      uint16_t acked_flags, uint32_t acked_len,
                                      const std::vector<uint8_t>& acked_payload = {}) {
  std::vector<uint8_t> b;
  append_u32(b, static_cast<uint32_t>(16 + 4 + 16 + acked_payload.size()));
  append_u16(b, 2);  // NLMSG_ERROR
  append_u16(b, 0);
  append_u32(b, seq);
  append_u32(b, 0);  // the daemon's port, as the kernel fills it; unused
  append_u32(b, static_cast<uint32_t>(error));
  append_u32(b, acked_len);
  append_u16(b, acked_type);
  append_u16(b, acked_flags);
  append_u32(b, seq);
  append_u32(b, 0);
  for (uint8_t x : acked_payload) b.push_back(x);
  return b;
}

// Attribute types of rdma/rdma_netlink.h.
constexpr uint16_t kAttrPathRecord = 1, kAttrTimeout = 2, kAttrServiceId = 3, kAttrDgid = 4,
                   kAttrSgid = 5, kAttrTclass = 6, kAttrPkey = 7, kAttrQosClass = 8, kAttrIpv4 = 9;

inline uint16_t read_u16(const std::vector<uint8_t>& b, size_t at) {
  uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}
inline uint32_t read_u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
inline uint16_t read_be16(const std::vector<uint8_t>& b, size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
inline uint64_t read_be64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}

}  // namespace rdmaqos::kmod::testing
