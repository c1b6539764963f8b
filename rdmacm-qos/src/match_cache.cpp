// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The per-process cache of host-side policy matches (see match_cache.h).
#include "rdma-qos/rdmacm-qos/match_cache.h"

namespace rdmaqos::rdmacm {

size_t MatchCache::KeyHash::operator()(const MatchKey& k) const noexcept {
  // Absent class and traffic class get values no present one has (they are 16 and 8 bits).
  const uint64_t qos_class = k.qos_class ? *k.qos_class : 0x10000;
  const uint64_t tclass = k.tclass ? *k.tclass : 0x100;
  uint64_t h = k.service_id * 0x9E3779B97F4A7C15ULL;
  h ^= (qos_class << 32) ^ (tclass << 16) ^ k.pkey;
  return static_cast<size_t>(h ^ (h >> 29));
}

void MatchCache::follow(const std::shared_ptr<const policy::CompiledPolicy>& policy) {
  if (policy_ == policy) return;
  entries_.clear();
  policy_ = policy;
}

MatchCache::Lookup MatchCache::find(const std::shared_ptr<const policy::CompiledPolicy>& policy,
                                    const MatchKey& key) {
  std::lock_guard lock(mutex_);
  follow(policy);
  auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  return {true, it->second};
}

void MatchCache::insert(const std::shared_ptr<const policy::CompiledPolicy>& policy,
                        const MatchKey& key, const std::optional<CmDecision>& decision) {
  std::lock_guard lock(mutex_);
  follow(policy);
  if (entries_.size() >= kCapacity) entries_.clear();
  entries_.insert_or_assign(key, decision);
}

size_t MatchCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void MatchCache::lock_for_fork() {
  mutex_.lock();
}

void MatchCache::unlock_after_fork() {
  mutex_.unlock();
}

}  // namespace rdmaqos::rdmacm
