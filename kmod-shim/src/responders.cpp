// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Other responders on the local-service group, from /proc/net/netlink and /proc/PID/fd.
#include "rdma-qos/kmod-shim/responders.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdma-qos/common/number.h"

namespace rdmaqos::kmod {

std::vector<NetlinkSocketInfo> parse_proc_net_netlink(std::string_view text) {
  std::vector<NetlinkSocketInfo> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sk, groups_hex;
    NetlinkSocketInfo s;
    long long rmem, wmem, dump, locks, drops;
    if (!(fields >> sk >> s.protocol >> s.port_id >> groups_hex >> rmem >> wmem >> dump >> locks >>
          drops >> s.inode))
      continue;  // the header line, or something this parser does not know
    auto groups = parse_hex_digits(groups_hex, UINT32_MAX);
    if (!groups) continue;
    s.groups = static_cast<uint32_t>(*groups);
    out.push_back(s);
  }
  return out;
}

std::vector<NetlinkSocketInfo> other_group_members(const std::vector<NetlinkSocketInfo>& sockets,
                                                   int protocol, unsigned group,
                                                   uint32_t own_port) {
  std::vector<NetlinkSocketInfo> out;
  if (group == 0 || group > 32) return out;
  for (const auto& s : sockets)
    if (s.protocol == protocol && (s.groups & (1u << (group - 1))) && s.port_id != own_port)
      out.push_back(s);
  return out;
}

std::string socket_owner(uint64_t inode, const std::string& proc_root) {
  namespace fs = std::filesystem;
  const std::string target = fmt::format("socket:[{}]", inode);
  std::error_code ec;
  // Advancing a /proc iterator throws when a process exits mid-scan: that only means the
  // owner is unknown, never that the daemon stops.
  try {
    for (const auto& proc : fs::directory_iterator(proc_root, ec)) {
      const std::string pid = proc.path().filename().string();
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::error_code fd_ec;
      for (const auto& fd : fs::directory_iterator(proc.path() / "fd", fd_ec)) {
        std::error_code link_ec;
        if (fs::read_symlink(fd.path(), link_ec).string() != target) continue;
        std::ifstream comm(proc.path() / "comm");
        std::string name;
        std::getline(comm, name);
        return fmt::format("pid {} ({})", pid, name.empty() ? "?" : name);
      }
    }
  } catch (const fs::filesystem_error&) {
  }
  return "unknown process";
}

}  // namespace rdmaqos::kmod
