// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The host module's address-keyed map: entries made, found and erased as connections come and
// go, checked against std::unordered_map doing the same.
#include "rdma-qos/common/pointer_map.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace rdmaqos {
namespace {

// Addresses as a program's allocations give them: 64-byte objects in one arena.
std::vector<char> arena(64 * 4096);
const void* object(size_t n) {
  return arena.data() + 64 * n;
}

TEST(PointerMap, AnEmptyMapFindsNothing) {
  PointerMap<int> m;
  EXPECT_EQ(m.find(object(1)), nullptr);
  EXPECT_FALSE(m.erase(object(1)));
  EXPECT_EQ(m.size(), 0u);
}

TEST(PointerMap, AnEntryMadeIsFoundWithItsValue) {
  PointerMap<std::string> m;
  m[object(3)] = "bench";
  ASSERT_NE(m.find(object(3)), nullptr);
  EXPECT_EQ(*m.find(object(3)), "bench");
  EXPECT_EQ(m.find(object(4)), nullptr);
  EXPECT_EQ(m.size(), 1u);
}

TEST(PointerMap, AMissingEntryIsMadeValueInitialised) {
  PointerMap<int> m;
  EXPECT_EQ(m[object(7)], 0);
  m[object(7)] = 5;
  EXPECT_EQ(m[object(7)], 5);
  EXPECT_EQ(m.size(), 1u);
}

TEST(PointerMap, ANullKeyIsNeverAnEntry) {
  PointerMap<int> m;
  m[object(1)] = 1;
  m[nullptr] = 2;
  EXPECT_EQ(m.find(nullptr), nullptr);
  EXPECT_EQ(m[nullptr], 0);
  EXPECT_FALSE(m.erase(nullptr));
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(*m.find(object(1)), 1);
}

TEST(PointerMap, AnErasedEntryIsGoneAndItsAddressStartsAfresh) {
  PointerMap<int> m;
  m[object(2)] = 9;
  EXPECT_TRUE(m.erase(object(2)));
  EXPECT_EQ(m.find(object(2)), nullptr);
  EXPECT_EQ(m.size(), 0u);
  // An object made later at the same address must not inherit the old entry's value.
  EXPECT_EQ(m[object(2)], 0);
}

TEST(PointerMap, KeepsEveryEntryAcrossGrowth) {
  PointerMap<size_t> m;
  for (size_t n = 0; n < 1000; ++n) m[object(n)] = n;
  EXPECT_EQ(m.size(), 1000u);
  for (size_t n = 0; n < 1000; ++n) {
    ASSERT_NE(m.find(object(n)), nullptr) << n;
    EXPECT_EQ(*m.find(object(n)), n);
  }
}

// Connections coming and going in random order, many more than are live at once: every find
// agrees with a reference map, whatever the erasures moved.
TEST(PointerMap, AgreesWithAReferenceMapUnderChurn) {
  PointerMap<size_t> m;
  std::unordered_map<const void*, size_t> reference;
  std::mt19937 random(12345);
  std::uniform_int_distribution<size_t> which(0, 4095);
  for (size_t step = 0; step < 200000; ++step) {
    const void* key = object(which(random));
    switch (random() % 3) {
      case 0:
        m[key] = step;
        reference[key] = step;
        break;
      case 1: EXPECT_EQ(m.erase(key), reference.erase(key) == 1) << step; break;
      default: {
        auto it = reference.find(key);
        const size_t* found = m.find(key);
        ASSERT_EQ(found != nullptr, it != reference.end()) << step;
        if (found != nullptr) {
          EXPECT_EQ(*found, it->second) << step;
        }
      }
    }
    ASSERT_EQ(m.size(), reference.size()) << step;
  }
  for (const auto& [key, value] : reference) {
    ASSERT_NE(m.find(key), nullptr);
    EXPECT_EQ(*m.find(key), value);
  }
}

// Values with a life of their own (the registries hold strings): each one made is destroyed
// once, whether erased, moved by an erasure or growth, or left to the map's end.
struct Counted {
  static inline int live = 0;
  std::string text = "level";
  Counted() { ++live; }
  Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++live; }
  Counted& operator=(Counted&&) = default;
  Counted& operator=(const Counted&) = default;
  Counted(const Counted& o) : text(o.text) { ++live; }
  ~Counted() { --live; }
};

TEST(PointerMap, DestroysEveryValueItMade) {
  Counted::live = 0;
  {
    PointerMap<Counted> m;
    for (size_t n = 0; n < 300; ++n) m[object(n)].text = std::to_string(n);
    for (size_t n = 0; n < 300; n += 3) m.erase(object(n));
    EXPECT_EQ(Counted::live, 200 + 1);  // the entries and the null key's scratch value
    for (size_t n = 1; n < 300; n += 3) EXPECT_EQ(m.find(object(n))->text, std::to_string(n));
  }
  EXPECT_EQ(Counted::live, 0);
}

}  // namespace
}  // namespace rdmaqos
