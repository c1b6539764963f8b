// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The tag the active side's module puts in a RoCE connection's private data, so the passive
// side's module matches what the active side matched on in one step (Documentation/
// architecture.md, "The passive side and the connection tag", has the wire format and why it
// is safe for a peer without the module). Pure functions: the preload module does the I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rdmaqos::rdmacm {

// What the passive side needs to repeat the active side's match: the QoS-Class and the traffic
// class (the program's TOS) it matched with, and a short hash of the level it got, to tell
// whether both hosts' policies agree.
struct CmTag {
  std::optional<uint16_t> qos_class;   // 12 bits; nullopt: matched without one
  std::optional<uint8_t> tclass;       // the program's TOS; nullopt: matched without one
  std::optional<uint32_t> level_hash;  // cm_tag_level_hash; nullopt: no level matched
  bool operator==(const CmTag&) const = default;
};

inline constexpr size_t kCmTagSize = 16;
// The private data of a connection request (IB CM REQ, 92 bytes) after rdma_cm's own 36-byte
// header for IP addresses: what the passive program receives, whatever the active one sent.
inline constexpr size_t kCmReqPrivateDataSize = 56;
inline constexpr uint8_t kCmTagVersion = 1;

// 24 bits of FNV-1a over the level's name.
uint32_t cm_tag_level_hash(std::string_view level_name);

// The 16 bytes for one connection: `dport` is the service port, `sport` the active side's
// source port (as cm_connection gives them on both sides); they enter the check word, so a tag
// copied from another connection does not validate.
std::array<uint8_t, kCmTagSize> encode_cm_tag(const CmTag& tag, uint16_t dport, uint16_t sport);
// The tag in `bytes` (kCmTagSize of them), or nullopt when they are not one made for this
// connection (magic, version, reserved bits or check word differ).
std::optional<CmTag> decode_cm_tag(const uint8_t* bytes, uint16_t dport, uint16_t sport);

// Active side: the program's private data with the tag in the last kCmTagSize bytes of the
// kCmReqPrivateDataSize the peer receives, zeros between. False, `out` untouched, when the
// program's data leaves no room (more than kCmReqPrivateDataSize - kCmTagSize bytes).
bool add_cm_tag(const void* data, size_t len, const CmTag& tag, uint16_t dport, uint16_t sport,
                std::array<uint8_t, kCmReqPrivateDataSize>& out);
// Passive side: the tag at the end of the received private data (`len` bytes), zeroed there so
// the program sees what the peer program sent; nullopt (nothing changed) when there is none.
std::optional<CmTag> take_cm_tag(uint8_t* data, size_t len, uint16_t dport, uint16_t sport);

}  // namespace rdmaqos::rdmacm
