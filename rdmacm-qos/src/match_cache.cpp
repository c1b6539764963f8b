// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The per-process cache of host-side policy matches (see match_cache.h).
#include "rdma-qos/rdmacm-qos/match_cache.h"

#include <bit>

namespace rdmaqos::rdmacm {

namespace {

// Fibonacci hashing of the key's fields: the top bits index the slots. Absent class and traffic
// class get values no present one has (they are 16 and 8 bits).
uint64_t key_hash(const MatchKey& k) {
  const uint64_t qos_class = k.qos_class ? *k.qos_class : 0x10000;
  const uint64_t tclass = k.tclass ? *k.tclass : 0x100;
  return (k.service_id ^ (qos_class << 40) ^ (tclass << 24) ^ k.pkey) * 0x9E3779B97F4A7C15ULL;
}

}  // namespace

MatchCache::Slot& MatchCache::slot_of(const MatchKey& key) {
  static_assert((kSlots & (kSlots - 1)) == 0, "kSlots is a power of two");
  constexpr unsigned kShift = 64 - std::countr_zero(kSlots);
  // At most kCapacity of kSlots are used, so a free slot ends every probe run.
  for (size_t i = static_cast<size_t>(key_hash(key) >> kShift);; i = (i + 1) & (kSlots - 1))
    if (!slots_[i].used || slots_[i].key == key) return slots_[i];
}

void MatchCache::clear() {
  for (Slot& slot : slots_) slot.used = false;
  used_ = 0;
}

void MatchCache::follow(const std::shared_ptr<const policy::CompiledPolicy>& policy) {
  if (policy_ == policy) return;
  clear();
  policy_ = policy;
}

MatchCache::Lookup MatchCache::find(const std::shared_ptr<const policy::CompiledPolicy>& policy,
                                    const MatchKey& key) {
  std::lock_guard lock(mutex_);
  follow(policy);
  const Slot& slot = slot_of(key);
  if (!slot.used) return {};
  return {true, slot.decision};
}

void MatchCache::insert(const std::shared_ptr<const policy::CompiledPolicy>& policy,
                        const MatchKey& key, const std::optional<CmDecision>& decision) {
  std::lock_guard lock(mutex_);
  follow(policy);
  Slot* slot = &slot_of(key);
  if (!slot->used) {
    if (used_ >= kCapacity) {
      clear();
      slot = &slot_of(key);
    }
    slot->used = true;
    slot->key = key;
    ++used_;
  }
  slot->decision = decision;
}

size_t MatchCache::size() const {
  std::lock_guard lock(mutex_);
  return used_;
}

void MatchCache::lock_for_fork() {
  mutex_.lock();
}

void MatchCache::unlock_after_fork() {
  mutex_.unlock();
}

}  // namespace rdmaqos::rdmacm
