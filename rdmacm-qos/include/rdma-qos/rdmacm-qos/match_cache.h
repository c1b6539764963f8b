// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The results of the host-side policy match (decide_roce) kept per process, so that a RoCE
// connection to a service already matched costs one look-up instead of a match: under an
// emulated or cold CPU a match touches the policy's rules and index every time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "rdma-qos/common/small_lock.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace rdmaqos::rdmacm {

// Everything a match reads besides the policy: the Service-ID (port space and port), the
// QoS-Class, the P_Key and the traffic class (the program's TOS / IPV6_TCLASS).
struct MatchKey {
  uint64_t service_id = 0;
  std::optional<uint16_t> qos_class;
  uint16_t pkey = 0;
  std::optional<uint8_t> tclass;
  bool operator==(const MatchKey&) const = default;
};

// Thread-safe. Filled for one compiled policy at a time: a look-up with another policy (a
// reload compiles a new one; that instance is the policy's generation) empties it first, so
// no level of an earlier policy is ever returned. The cache keeps the policy it was filled
// from alive, so a new policy can never be mistaken for it by address.
// One array with open addressing, made once: a look-up (every RoCE connection, on each side)
// is a hash and a compare or two, with no allocation or node walk.
class MatchCache {
 public:
  // More distinct keys than a process has services and classes in practice; when full, the
  // cache starts again empty (bounded memory whatever a program asks).
  static constexpr size_t kCapacity = 256;

  struct Lookup {
    bool hit = false;
    std::optional<CmDecision> decision;  // nullopt on a hit: the policy gives no level
  };
  Lookup find(const std::shared_ptr<const policy::CompiledPolicy>& policy, const MatchKey& key);
  void insert(const std::shared_ptr<const policy::CompiledPolicy>& policy, const MatchKey& key,
              const std::optional<CmDecision>& decision);
  size_t size() const;

  // For a host module's fork handlers (a lock another thread held would stay held in the
  // child): taken before fork, released after it on both sides.
  void lock_for_fork();
  void unlock_after_fork();

 private:
  // Twice the capacity, a power of two: probe runs stay short up to kCapacity entries.
  static constexpr size_t kSlots = 2 * kCapacity;
  struct Slot {
    bool used = false;
    MatchKey key;
    std::optional<CmDecision> decision;
  };
  // The slot holding `key`, or the free slot where it would go (mutex held).
  Slot& slot_of(const MatchKey& key);
  // Empties the cache when `policy` is not the one it was filled from (mutex held).
  void follow(const std::shared_ptr<const policy::CompiledPolicy>& policy);
  void clear();

  mutable SmallLock mutex_;
  std::shared_ptr<const policy::CompiledPolicy> policy_;
  std::array<Slot, kSlots> slots_{};
  size_t used_ = 0;
};

}  // namespace rdmaqos::rdmacm
