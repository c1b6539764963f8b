// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Finding other local-service responders (ibacm, or its systemd socket) on the kernel's
// path-query group: any other netlink socket of the family subscribed to the group.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rdmaqos::kmod {

struct NetlinkSocketInfo {
  int protocol = 0;  // NETLINK_RDMA is 20
  uint32_t port_id = 0;
  uint32_t groups = 0;  // bitmask of the first 32 groups (group N is bit N-1)
  uint64_t inode = 0;
};

// Rows of /proc/net/netlink ("sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode"); lines
// that do not parse are skipped.
std::vector<NetlinkSocketInfo> parse_proc_net_netlink(std::string_view text);

// The sockets of `protocol` subscribed to `group` other than `own_port`.
std::vector<NetlinkSocketInfo> other_group_members(const std::vector<NetlinkSocketInfo>& sockets,
                                                   int protocol, unsigned group, uint32_t own_port);

// "pid 1234 (ibacm)" for the process holding socket `inode` ("pid 1 (systemd)" for a socket
// unit that waits for its service); "unknown process" when /proc does not tell.
std::string socket_owner(uint64_t inode, const std::string& proc_root = "/proc");

}  // namespace rdmaqos::kmod
