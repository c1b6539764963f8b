// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The initial-network-namespace check of rdma-qos-lsd.
#include "rdma-qos/kmod-shim/netns.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmaqos::kmod {

namespace {

// "net:[4026531840]" for a /proc namespace link, else the inode number.
std::string name_of(const std::string& path, const struct stat& st) {
  char buf[256];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return fmt::format("inode {}", static_cast<unsigned long long>(st.st_ino));
}

}  // namespace

NetnsCheck check_initial_netns(const std::string& self, const std::string& initial) {
  struct stat own {
  }, first{};
  if (stat(self.c_str(), &own) != 0)
    return {NetnsState::kUnknown, fmt::format("{}: {}", self, std::strerror(errno))};
  if (stat(initial.c_str(), &first) != 0)
    return {NetnsState::kUnknown, fmt::format("{}: {}", initial, std::strerror(errno))};
  const bool same = own.st_dev == first.st_dev && own.st_ino == first.st_ino;
  std::string detail =
      fmt::format("{} is {}, {} is {}", self, name_of(self, own), initial, name_of(initial, first));
  return {same ? NetnsState::kInitial : NetnsState::kOther, std::move(detail)};
}

}  // namespace rdmaqos::kmod
