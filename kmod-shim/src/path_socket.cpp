// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The path service's listening socket when rdma-qos-lsd makes it itself (not passed by systemd):
// see bind_path_socket in path_service.h.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "rdma-qos/common/unix_address.h"
#include "rdma-qos/kmod-shim/path_service.h"
#include "rdma-qos/sa-client/path_service_client.h"

namespace rdmaqos::kmod {

Result<int> bind_path_socket(const std::string& path) {
  const std::optional<sockaddr_un> address = unix_address(path);
  if (!address)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("path socket '{}': not a socket path", path));
  const sockaddr_un& addr = *address;
  auto fail = [&path](const char* what) {
    return make_error(ErrorCode::kTransport,
                      fmt::format("path socket {}: {}: {}", path, what, std::strerror(errno)));
  };
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return make_error(ErrorCode::kTransport, fmt::format("path socket {}: creating {}: {}", path,
                                                           dir.string(), ec.message()));
  }
  // A socket file left by a daemon that died: remove it, unless someone still accepts on it
  // (a second rdma-qos-lsd must not steal the first one's askers).
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return make_error(ErrorCode::kInvalidArgument,
                        fmt::format("path socket {}: exists and is not a socket", path));
    auto probe = sa::connect_path_service(path);
    if (probe) close(*probe);
    // Busy is someone listening too (its backlog full); any other failure leaves the file alone.
    if (probe || probe.error().code == ErrorCode::kBusy)
      return make_error(ErrorCode::kTransport,
                        fmt::format("path socket {}: another service listens there", path));
    if (probe.error().code != ErrorCode::kNotFound)
      return make_error(ErrorCode::kTransport,
                        fmt::format("path socket {}: {}", path, probe.error().message));
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return fail("removing the stale socket");
  }
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket");
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    auto e = fail("bind");
    close(fd);
    return e;
  }
  // Every local user may ask: a path is what any SA client of the fabric may read, and asking
  // here needs no umad access, which is the point.
  if (chmod(path.c_str(), 0666) != 0 || listen(fd, SOMAXCONN) != 0) {
    auto e = fail("chmod or listen");
    close(fd);
    unlink(path.c_str());
    return e;
  }
  return fd;
}

}  // namespace rdmaqos::kmod
