// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The initial-network-namespace check compares two namespace files by identity.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "rdma-qos/kmod-shim/netns.h"

namespace rdmaqos::kmod {
namespace {

TEST(Netns, SameFileIsTheInitialNamespace) {
  auto c = check_initial_netns("/proc/self/ns/net", "/proc/self/ns/net");
  EXPECT_EQ(c.state, NetnsState::kInitial);
  EXPECT_NE(c.detail.find("net:["), std::string::npos) << c.detail;
}

TEST(Netns, AnotherFileIsAnotherNamespace) {
  char path[] = "/tmp/rdma-qos-netns-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto c = check_initial_netns("/proc/self/ns/net", path);
  unlink(path);
  EXPECT_EQ(c.state, NetnsState::kOther);
  EXPECT_NE(c.detail.find(path), std::string::npos) << c.detail;
}

TEST(Netns, UnreadableFileIsUnknownAndNamed) {
  auto c = check_initial_netns("/proc/self/ns/net", "/nonexistent/ns/net");
  EXPECT_EQ(c.state, NetnsState::kUnknown);
  EXPECT_NE(c.detail.find("/nonexistent/ns/net: No such file or directory"), std::string::npos)
      << c.detail;
}

}  // namespace
}  // namespace rdmaqos::kmod
