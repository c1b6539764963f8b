// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The port tables' device-name comparison: exact for short and long names, whatever follows
// the NUL.
#include "device_name.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace rdmaqos::preload {
namespace {

// A name in a 64-byte array (as ibv_device::name), the bytes after its NUL set to `fill`.
std::array<char, 64> name(const std::string& text, char fill = 0) {
  std::array<char, 64> out;
  out.fill(fill);
  text.copy(out.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

TEST(DeviceName, EqualNamesAreEqualWhateverFollowsTheirEnd) {
  for (const std::string n : {"", "r", "rxe0", "mlx5_0", "mlx5_10", "mlx5_bond_0",
                              "a_device_name_well_past_one_word_and_two"})
    EXPECT_TRUE(same_device_name(name(n).data(), name(n, 'x').data())) << n;
}

TEST(DeviceName, NamesThatDifferAnywhereDiffer) {
  EXPECT_FALSE(same_device_name(name("rxe0").data(), name("rxe1").data()));
  EXPECT_FALSE(same_device_name(name("rxe0").data(), name("rxe").data()));
  EXPECT_FALSE(same_device_name(name("rxe").data(), name("rxe0").data()));
  EXPECT_FALSE(same_device_name(name("mlx5_1").data(), name("mlx5_10").data()));
  EXPECT_FALSE(same_device_name(name("mlx5_10").data(), name("mlx5_1", '0').data()));
  EXPECT_FALSE(same_device_name(name("mlx5_bond_0").data(), name("mlx5_bond_1").data()));
  EXPECT_FALSE(same_device_name(name("mlx5_bon").data(), name("mlx5_bond").data()));
  EXPECT_FALSE(same_device_name(name("").data(), name("a").data()));
  // A byte with its top bit set next to the end (UTF-8 in a name) is not taken for the NUL.
  EXPECT_FALSE(same_device_name(name("\x81\x80").data(), name("\x81\x81").data()));
  EXPECT_TRUE(same_device_name(name("\x81\x80").data(), name("\x81\x80", 'z').data()));
}

}  // namespace
}  // namespace rdmaqos::preload
