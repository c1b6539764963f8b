// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The raw dump of the kernel's netlink datagrams (netlink_dump.h).
#include "netlink_dump.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace rdmaqos::kmod {

NetlinkDump::NetlinkDump(std::string dir) : dir_(std::move(dir)) {}

rdmaqos::Result<void> NetlinkDump::write(std::span<const uint8_t> datagram) {
  if (stopped_) return {};
  const std::string path = fmt::format("{}/netlink-{}-{}", dir_, getpid(), ++written_);
  // O_EXCL and O_NOFOLLOW: never through a link or over a file someone placed there.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  while (ok && !datagram.empty()) {
    ssize_t n = ::write(fd, datagram.data(), datagram.size());
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) datagram = datagram.subspan(static_cast<size_t>(n));
  }
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (ok) return {};
  stopped_ = true;
  return rdmaqos::make_error(
      rdmaqos::ErrorCode::kTransport,
      fmt::format("--dump-netlink: cannot write {}: {}; no more datagrams are dumped", path,
                  std::strerror(err)));
}

}  // namespace rdmaqos::kmod
