// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Close-on-exec for umad ports (see umad_port.h).
#include "rdma-qos/sa-client/umad_port.h"

#include <fcntl.h>
#include <infiniband/umad.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace rdmaqos::sa {

bool set_close_on_exec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0) return errno == EBADF;
  if ((flags & FD_CLOEXEC) != 0) return true;
  return ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0;
}

Result<int> open_umad_port(const std::string& ca, int port) {
  int portid = umad_open_port(ca.c_str(), port);
  if (portid < 0) {
    return make_error(ErrorCode::kTransport,
                      fmt::format("umad_open_port({}, {}): {}", ca, port, std::strerror(-portid)));
  }
  if (!set_close_on_exec(portid)) {
    int err = errno;
    umad_close_port(portid);
    return make_error(
        ErrorCode::kTransport,
        fmt::format("umad_open_port({}, {}): close-on-exec: {}", ca, port, std::strerror(err)));
  }
  return portid;
}

}  // namespace rdmaqos::sa
