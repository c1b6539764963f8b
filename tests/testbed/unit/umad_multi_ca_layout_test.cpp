// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The host layout umad_multi_ca reads from UMAD_MULTI_CA: which ports a device has and which
// ibsim node backs each, and the layouts it refuses rather than guess at.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "../src/umad_multi_ca/host_layout.h"
}

namespace {

struct Parsed {
  int count;
  host_port ports[4];
};

Parsed parse(const char* text) {
  Parsed p{};
  p.count = host_layout_parse(text, p.ports, 4);
  return p;
}

TEST(UmadMultiCaLayout, TwoDevicesAndASecondPortInTheOrderGiven) {
  Parsed p = parse("mlx5_0/1=node001  mlx5_1/1=node002\tmlx5_0/2=node003\n");
  ASSERT_EQ(p.count, 3);
  EXPECT_EQ(std::string(p.ports[0].device), "mlx5_0");
  EXPECT_EQ(p.ports[0].port, 1);
  EXPECT_EQ(std::string(p.ports[0].node), "node001");
  EXPECT_EQ(std::string(p.ports[1].device), "mlx5_1");
  EXPECT_EQ(std::string(p.ports[1].node), "node002");
  EXPECT_EQ(std::string(p.ports[2].device), "mlx5_0");
  EXPECT_EQ(p.ports[2].port, 2);
  EXPECT_EQ(std::string(p.ports[2].node), "node003");
}

TEST(UmadMultiCaLayout, AnEmptyLayoutHasNoPorts) {
  EXPECT_EQ(parse("").count, 0);
  EXPECT_EQ(parse("  \n").count, 0);
}

TEST(UmadMultiCaLayout, MalformedEntriesAreRefused) {
  for (const char* bad : {"mlx5_0=node001", "mlx5_0/1", "mlx5_0/1=", "/1=node001",
                          "mlx5_0/0=node001", "mlx5_0/10=node001", "mlx5_0/x=node001",
                          "mlx5_0/1x=node001", "a_device_name_too_long/1=node001",
                          // A NodeDescription with a blank cannot be named: "HCA-1" is an entry.
                          "mlx5_0/1=node001 HCA-1"})
    EXPECT_EQ(parse(bad).count, -1) << bad;
}

TEST(UmadMultiCaLayout, APortNamedTwiceIsRefused) {
  EXPECT_EQ(parse("mlx5_0/1=node001 mlx5_0/1=node002").count, -1);
}

TEST(UmadMultiCaLayout, MorePortsThanRoomAreRefused) {
  EXPECT_EQ(parse("a/1=n1 a/2=n2 a/3=n3 a/4=n4").count, 4);
  EXPECT_EQ(parse("a/1=n1 a/2=n2 a/3=n3 a/4=n4 a/5=n5").count, -1);
}

}  // namespace
