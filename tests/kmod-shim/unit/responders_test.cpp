// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Other responders on the path-query group, found in /proc/net/netlink.
#include <gtest/gtest.h>

#include "rdma-qos/kmod-shim/responders.h"

namespace rdmaqos::kmod {
namespace {

constexpr const char* kProcNetNetlink =
    "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n"
    "0000000000000000 0   1          00000550 0        0        0     2        0        20015\n"
    "0000000000000000 20  0          00000000 0        0        0     2        0        12\n"
    "0000000000000000 20  4711       00000004 0        0        0     2        0        33001\n"
    "0000000000000000 20  1234       00000004 0        0        0     2        0        33002\n"
    "0000000000000000 20  99         00000002 0        0        0     2        0        33003\n"
    "garbage line\n";

TEST(Responders, ParsesEveryRow) {
  auto s = parse_proc_net_netlink(kProcNetNetlink);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[2].protocol, 20);
  EXPECT_EQ(s[2].port_id, 4711u);
  EXPECT_EQ(s[2].groups, 4u);
  EXPECT_EQ(s[2].inode, 33001u);
}

TEST(Responders, OtherMembersOfGroupThreeExcludeOurOwnSocket) {
  auto others = other_group_members(parse_proc_net_netlink(kProcNetNetlink), 20, 3, 4711);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].port_id, 1234u);
}

TEST(Responders, NoneWhenAloneOnTheGroup) {
  auto s = parse_proc_net_netlink(kProcNetNetlink);
  s.erase(s.begin() + 3);
  EXPECT_TRUE(other_group_members(s, 20, 3, 4711).empty());
}

TEST(Responders, UnknownInodeHasNoOwner) {
  EXPECT_EQ(socket_owner(0xFFFFFFFFFFULL), "unknown process");
}

}  // namespace
}  // namespace rdmaqos::kmod
