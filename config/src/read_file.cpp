// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading a named file safely: regular files only, bounded size (see read_file.h).
#include "rdma-qos/config/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace rdmaqos::config {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

Error error(ErrorCode code, std::string why) {
  return make_error(code, std::move(why));
}

}  // namespace

Result<std::string> read_regular_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  constexpr int kFlags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  Fd f{open(path.c_str(), kFlags)};  // NOLINT(cppcoreguidelines-pro-type-vararg)
  if (f.fd < 0) {
    int e = errno;
    return error(e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kTransport,
                 strerror(e));  // NOLINT(concurrency-mt-unsafe): message only
  }
  struct stat st {};
  if (fstat(f.fd, &st) != 0) return error(ErrorCode::kTransport, "cannot stat it");
  // /dev/null is the usual way to say "no file": read as empty.
  if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) return std::string();
  if (!S_ISREG(st.st_mode))
    return error(ErrorCode::kInvalidArgument, S_ISDIR(st.st_mode)
                                                  ? "it is a directory, not a regular file"
                                                  : "it is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return error(ErrorCode::kInvalidArgument,
                 fmt::format("it is larger than the limit of {} bytes", max_bytes));
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error(ErrorCode::kTransport, "read error");
    if (n == 0) break;
    // The file may grow between fstat and read: the limit holds for what is read too.
    if (text.size() + static_cast<size_t>(n) > max_bytes)
      return error(ErrorCode::kInvalidArgument,
                   fmt::format("it is larger than the limit of {} bytes", max_bytes));
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace rdmaqos::config
