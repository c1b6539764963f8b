// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Close-on-exec for the umad ports we open (libibumad opens them inheritable): the helper on
// ordinary descriptors, since a unit test has no umad device (and umad2sim's are none).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "rdma-qos/sa-client/umad_port.h"

namespace rdmaqos::sa {
namespace {

bool close_on_exec(int fd) {
  return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
}

TEST(SetCloseOnExec, MarksAnInheritableDescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, 0), 0);
  ASSERT_FALSE(close_on_exec(fds[0]));
  EXPECT_TRUE(set_close_on_exec(fds[0]));
  EXPECT_TRUE(close_on_exec(fds[0]));
  EXPECT_FALSE(close_on_exec(fds[1]));  // only the one named
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(SetCloseOnExec, KeepsADescriptorAlreadyMarked) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  EXPECT_TRUE(set_close_on_exec(fds[0]));
  EXPECT_TRUE(close_on_exec(fds[0]));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(SetCloseOnExec, ANumberThatIsNoOpenFileHasNothingToLeak) {
  // umad2sim's ports are numbers from 1024 up that the kernel never gave out.
  int fds[2];
  ASSERT_EQ(::pipe2(fds, 0), 0);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_TRUE(set_close_on_exec(fds[0]));
}

}  // namespace
}  // namespace rdmaqos::sa
