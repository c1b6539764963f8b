// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// 128-bit GIDs in wire (network) order, with the text form used by the IB tools
// ("fe80::2:c903:0:1", full IPv6 syntax).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmaqos::sa {

using Gid = std::array<uint8_t, 16>;

// GID from subnet prefix and interface id (port GUID), both in host order.
Gid make_gid(uint64_t prefix, uint64_t guid);
uint64_t gid_prefix(const Gid& gid);
uint64_t gid_guid(const Gid& gid);
bool is_zero(const Gid& gid);

// IPv6 text syntax; nullopt when `text` is not a GID.
std::optional<Gid> parse_gid(std::string_view text);
std::string format_gid(const Gid& gid);

}  // namespace rdmaqos::sa
