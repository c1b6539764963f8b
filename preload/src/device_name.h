// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Comparing device names as the port tables (ports.cpp) do on every step of every connection.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace rdmaqos::preload {

// Whether two NUL-terminated device names are equal. Both must lie in arrays of at least 8 bytes
// (ibv_device::name and the tables' copies hold IBV_SYSFS_NAME_MAX), so that their first words
// can always be read: a name that ends in them ("rxe0", "mlx5_0": most device names) is compared
// in one word, without a call to strcmp. Bytes after a NUL are not compared (nothing says they
// are 0).
inline bool same_device_name(const char* a, const char* b) {
  uint64_t wa = 0;
  uint64_t wb = 0;
  std::memcpy(&wa, a, sizeof wa);
  std::memcpy(&wb, b, sizeof wb);
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  // The lowest flagged byte is `a`'s first NUL (flags above it may be false, that one is not).
  const uint64_t zeros = (wa - kOnes) & ~wa & kHighs;
  if (zeros == 0) return wa == wb && std::strcmp(a + sizeof wa, b + sizeof wb) == 0;
  const int name_bits = std::countr_zero(zeros) + 1;  // up to and with the NUL's top bit
  const uint64_t mask = name_bits == 64 ? ~0ull : (1ull << name_bits) - 1;
  static_assert(std::endian::native == std::endian::little, "byte 0 is the low byte");
  return ((wa ^ wb) & mask) == 0;
}

}  // namespace rdmaqos::preload
