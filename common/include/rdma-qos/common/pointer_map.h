// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A map from object addresses (rdma_cm ids, QPs) to small values, for the host module's
// per-connection registries: open addressing in one array, so an entry made, found and erased
// per connection allocates nothing (the array grows, by doubling, only when it is half full)
// and each step runs a handful of instructions in one place. Connection setup runs these steps
// several times per connection on each side, and under emulation (the RoCE test bed's TCG
// guest) what a step costs follows how much distinct code and data it touches; a node-based
// std::unordered_map costs an allocation, a free and its bucket code per entry.
// Not thread-safe: the registries hold their own lock around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace rdmaqos {

template <typename Value>
class PointerMap {
 public:
  PointerMap() = default;
  PointerMap(const PointerMap&) = delete;
  PointerMap& operator=(const PointerMap&) = delete;
  ~PointerMap() {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != nullptr) slots_[i].value().~Value();
  }

  // The entry for `key`, or nullptr. A null key is never an entry.
  Value* find(const void* key) {
    if (key == nullptr || capacity_ == 0) return nullptr;
    for (size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return &slots_[i].value();
      if (slots_[i].key == nullptr) return nullptr;
    }
  }
  const Value* find(const void* key) const { return const_cast<PointerMap*>(this)->find(key); }

  // The entry for `key`, made (value-initialised) when there was none. May allocate (growth); a
  // reference stays valid until the next call that adds an entry. A null key gets a scratch
  // value, fresh each time, that no find returns.
  Value& operator[](const void* key) {
    if (key == nullptr) {
      null_scratch_ = Value{};
      return null_scratch_;
    }
    if (Value* v = find(key)) return *v;
    if ((used_ + 1) * 2 > capacity_) [[unlikely]]
      grow();
    size_t i = home(key);
    while (slots_[i].key != nullptr) i = next(i);
    new (slots_[i].raw) Value{};
    slots_[i].key = key;
    ++used_;
    return slots_[i].value();
  }

  // Removes `key`'s entry; false when there was none. Later entries of the same probe run move
  // back into the hole (no tombstones, so finds stay short however many connections came and
  // went).
  bool erase(const void* key) {
    if (key == nullptr || capacity_ == 0) return false;
    size_t hole = home(key);
    while (slots_[hole].key != key) {
      if (slots_[hole].key == nullptr) return false;
      hole = next(hole);
    }
    slots_[hole].value().~Value();
    for (size_t i = next(hole); slots_[i].key != nullptr; i = next(i)) {
      // An entry may fill the hole when its home is not cyclically in (hole, i].
      const size_t h = home(slots_[i].key);
      const bool stays = hole < i ? (h > hole && h <= i) : (h > hole || h <= i);
      if (stays) continue;
      new (slots_[hole].raw) Value(std::move(slots_[i].value()));
      slots_[hole].key = slots_[i].key;
      slots_[i].value().~Value();
      hole = i;
    }
    slots_[hole].key = nullptr;
    --used_;
    return true;
  }

  size_t size() const { return used_; }

 private:
  // Trivial, so a new array is one zeroing of its bytes; a value lives in `raw` only while
  // `key` is set.
  struct Slot {
    const void* key;
    alignas(Value) unsigned char raw[sizeof(Value)];
    Value& value() { return *std::launder(reinterpret_cast<Value*>(raw)); }
  };

  size_t home(const void* key) const {
    // Fibonacci hashing of the address: allocations share their low bits, the product's top
    // bits do not.
    const uint64_t h =
        static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> shift_);
  }
  size_t next(size_t i) const { return (i + 1) & (capacity_ - 1); }

  // Out of line: rare, and the per-connection steps stay short without it.
  [[gnu::noinline]] void grow() {
    const size_t old_capacity = capacity_;
    std::unique_ptr<Slot[]> old = std::move(slots_);
    capacity_ = old_capacity == 0 ? 16 : old_capacity * 2;
    slots_.reset(new Slot[capacity_]());
    shift_ = 64;
    for (size_t c = capacity_; c > 1; c >>= 1) --shift_;
    for (size_t j = 0; j < old_capacity; ++j) {
      if (old[j].key == nullptr) continue;
      size_t i = home(old[j].key);
      while (slots_[i].key != nullptr) i = next(i);
      new (slots_[i].raw) Value(std::move(old[j].value()));
      slots_[i].key = old[j].key;
      old[j].value().~Value();
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  unsigned shift_ = 64;
  Value null_scratch_{};
};

}  // namespace rdmaqos
