// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Per-port value lists: syntax, most-specific-wins lookup, and errors naming the entry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rdma-qos/config/port_values.h"
#include "rdma-qos/testbed/result_matchers.h"

namespace rdmaqos::config {
namespace {

using rdmaqos::testing::FailedWith;
using rdmaqos::testing::Succeeded;

TEST(PortValues, MostSpecificEntryWins) {
  auto v = parse_port_values("0, mlx5_0=104, rxe0:2=32", 255);
  ASSERT_THAT(v, Succeeded());
  EXPECT_EQ(v->lookup("rxe0", 2), 32u);
  EXPECT_EQ(v->lookup("rxe0", 1), 0u);
  EXPECT_EQ(v->lookup("mlx5_0", 1), 104u);
  EXPECT_EQ(v->lookup("other", 1), 0u);
}

TEST(PortValues, NoDefaultMeansUncovered) {
  auto v = parse_port_values("rxe0:1=0x68", 255);
  ASSERT_THAT(v, Succeeded());
  EXPECT_EQ(v->lookup("rxe0", 1), 0x68u);
  EXPECT_FALSE(v->lookup("rxe1", 1));
}

TEST(PortValues, EmptyListCoversNothing) {
  auto v = parse_port_values("  ", 255);
  ASSERT_THAT(v, Succeeded());
  EXPECT_TRUE(v->entries.empty());
}

TEST(PortValues, ErrorsNameTheEntry) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"256", "'256': value must be a number 0..255"},
      {"rxe0:0=1", "'rxe0:0=1': port must be a number 1..255"},
      {"rxe0:x=1", "'rxe0:x=1': port must be a number 1..255"},
      {"rx e0=1", "'rx e0=1': bad device name 'rx e0'"},
      {"1, 2", "'2': a second entry for the same default"},
      {"rxe0=1,,", "empty entry in the list"},
      {"rxe0=", "'rxe0=': value must be a number 0..255"},
  };
  for (const auto& c : cases) {
    auto v = parse_port_values(c.text, 255);
    ASSERT_THAT(v, FailedWith(ErrorCode::kInvalidArgument)) << c.text;
    EXPECT_EQ(v.error().message, c.message) << c.text;
  }
}

// The sa_lid knob: one LID for every port, or one per port on a host whose ports are on
// different subnets; a port no entry covers asks its SM.
TEST(PortLids, OneForEveryPortOrPerPort) {
  auto one = parse_port_lids("9");
  ASSERT_THAT(one, Succeeded());
  EXPECT_EQ(port_lid_of(*one, "mlx5_0", 1), 9);
  EXPECT_EQ(port_lid_of(*one, "mlx5_1", 2), 9);
  auto per_port = parse_port_lids("mlx5_0:1=9, mlx5_1=0x20");
  ASSERT_THAT(per_port, Succeeded());
  EXPECT_EQ(port_lid_of(*per_port, "mlx5_0", 1), 9);
  EXPECT_EQ(port_lid_of(*per_port, "mlx5_0", 2), std::nullopt);
  EXPECT_EQ(port_lid_of(*per_port, "mlx5_1", 2), 0x20);
  auto none = parse_port_lids("");
  ASSERT_THAT(none, Succeeded());
  EXPECT_EQ(port_lid_of(*none, "mlx5_0", 1), std::nullopt);
}

TEST(PortLids, OnlyUnicastLids) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"0", "'0': value must be a number 1..49151"},
      {"mlx5_0:1=0xc000", "'mlx5_0:1=0xc000': value must be a number 1..49151"},
      {"9, mlx5_1=0", "'mlx5_1=0': value must be a number 1..49151"},
  };
  for (const auto& c : cases) {
    auto lids = parse_port_lids(c.text);
    ASSERT_THAT(lids, FailedWith(ErrorCode::kInvalidArgument)) << c.text;
    EXPECT_EQ(lids.error().message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace rdmaqos::config
