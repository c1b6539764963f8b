// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A local socket's address from its path, for the daemons' control and path sockets and their
// clients: nullopt when the path is empty or does not fit sun_path (108 bytes with its NUL).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <optional>
#include <string_view>

namespace rdmaqos {

inline std::optional<sockaddr_un> unix_address(std::string_view path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return std::nullopt;
  std::memcpy(addr.sun_path, path.data(), path.size());  // the rest is zero: NUL-terminated
  return addr;
}

}  // namespace rdmaqos
