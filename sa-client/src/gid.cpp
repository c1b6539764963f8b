// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// GID helpers: IPv6 text form through inet_pton/inet_ntop, which already implement it.
#include "rdma-qos/sa-client/gid.h"

#include <arpa/inet.h>

#include <algorithm>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {

Gid make_gid(uint64_t prefix, uint64_t guid) {
  Gid g{};
  wire::put64(g.data(), prefix);
  wire::put64(g.data() + 8, guid);
  return g;
}

uint64_t gid_prefix(const Gid& gid) {
  return wire::get64(gid.data());
}
uint64_t gid_guid(const Gid& gid) {
  return wire::get64(gid.data() + 8);
}
bool is_zero(const Gid& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

std::optional<Gid> parse_gid(std::string_view text) {
  std::string s(text);
  Gid g{};
  if (inet_pton(AF_INET6, s.c_str(), g.data()) != 1) return std::nullopt;
  return g;
}

std::string format_gid(const Gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.data(), buf, sizeof buf);
  return buf;
}

}  // namespace rdmaqos::sa
