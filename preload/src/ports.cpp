// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Port and GID queries with their small caches (see ports.h).
#include "ports.h"

#include <endian.h>

#include <array>
#include <atomic>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>

#include "device_name.h"
#include "real_calls.h"

namespace rdmaqos::preload {
namespace {

// One lock for every table: each holds it only to scan a few entries, and the fork handlers
// have one lock to take instead of one per table.
std::mutex port_tables_mutex;

// A small table keyed by device name, port and index, scanned linearly: a host has a handful of
// ports, and connection setup reads these tables on every step, so a look-up neither allocates
// nor takes a lock. A key is only ever added, published by the count that follows it, and its
// value is one atomic word; adding a key or refreshing a value takes the lock. Full: the caller
// queries without caching.
template <size_t kSize>
class PortTable {
 public:
  std::optional<uint64_t> find(const char* device, uint8_t port, uint8_t index) const {
    if (const Entry* e = entry(device, port, index, used_.load(std::memory_order_acquire)))
      return e->value.load(std::memory_order_relaxed);
    return std::nullopt;
  }
  void put(const char* device, uint8_t port, uint8_t index, uint64_t value) {
    std::lock_guard lock(port_tables_mutex);
    const size_t used = used_.load(std::memory_order_relaxed);
    if (Entry* e = entry(device, port, index, used)) {
      e->value.store(value, std::memory_order_relaxed);
      return;
    }
    if (used == kSize || std::strlen(device) >= sizeof entries_[used].device) return;
    Entry& e = entries_[used];
    std::strcpy(e.device, device);
    e.port = port;
    e.index = index;
    e.value.store(value, std::memory_order_relaxed);
    used_.store(used + 1, std::memory_order_release);
  }

 private:
  struct Entry {
    char device[IBV_SYSFS_NAME_MAX] = {};
    uint8_t port = 0;
    uint8_t index = 0;
    std::atomic<uint64_t> value{0};
  };
  // same_device_name reads a name's first word from both arrays.
  static_assert(sizeof(Entry::device) == sizeof(ibv_device::name));
  Entry* entry(const char* device, uint8_t port, uint8_t index, size_t used) const {
    for (size_t i = 0; i < used; ++i) {
      Entry& e = const_cast<Entry&>(entries_[i]);
      if (e.port == port && e.index == index && same_device_name(e.device, device)) return &e;
    }
    return nullptr;
  }
  std::array<Entry, kSize> entries_{};
  std::atomic<size_t> used_{0};
};

uint64_t coarse_now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000 + static_cast<uint64_t>(t.tv_nsec) / 1000000;
}

// A GID index's type (v1 or v2) changes only when the port's GID table is rebuilt (an address
// added or removed), so it is remembered for a second: a burst of connection setups queries it
// once, not once per QP on each side. A connection made within that second after such a change
// may get the old index's label decision (a label on a RoCE v1 QP, which only the GRH carries,
// or none on a v2 one); its SL and traffic class do not depend on it.
constexpr uint64_t kPortValueTtlMs = 1000;

// A value kept for a time (a GID's type, a LID, a P_Key): the value in the low 16 bits, the time
// it was read (ms) above them.
uint64_t timed_word(uint16_t value, uint64_t when_ms) {
  return when_ms << 16 | value;
}

// The value of `word` if it was read less than kPortValueTtlMs before `now`. A port's LID changes
// only when the SM reassigns it and a P_Key only when the SM rewrites the table: kept a second,
// like a GID's type.
std::optional<uint16_t> fresh_value(std::optional<uint64_t> word, uint64_t now) {
  if (!word || now - (*word >> 16) >= kPortValueTtlMs) return std::nullopt;
  return static_cast<uint16_t>(*word & 0xFFFF);
}

// Constant-initialised: no initialisation guard that another thread could hold when the
// program forks, and nothing to destroy at exit.
// A port's link layer never changes while its device exists: added once, never refreshed.
constinit PortTable<32> link_layers;
constinit PortTable<64> gid_types;
constinit PortTable<32> port_lids;
// Keyed by an 8-bit index; larger ones (rare) are queried each time.
constinit PortTable<64> port_pkeys;

// The first look at a port: out of line, so the look-up every connection step makes is short
// (no registers saved for a query it does not make).
[[gnu::noinline, gnu::cold]] int query_link_layer(ibv_context* ctx, uint8_t port) {
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa) != 0) return -1;
  link_layers.put(ctx->device->name, port, 0, pa.link_layer);
  return pa.link_layer;
}

// The attributes `mask` names of a QP (ibv_query_qp through the table); nullopt when it cannot
// be asked.
std::optional<ibv_qp_attr> query_qp(ibv_qp* qp, int mask) {
  auto query = real_verbs().query_qp;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (query == nullptr || query(qp, &attr, mask, &init) != 0) return std::nullopt;
  return attr;
}

}  // namespace

int port_link_layer(ibv_context* ctx, uint8_t port) {
  if (ctx == nullptr || ctx->device == nullptr || port == 0) return -1;
  if (auto link = link_layers.find(ctx->device->name, port, 0)) return static_cast<int>(*link);
  return query_link_layer(ctx, port);
}

providers::LinkKind link_kind(ibv_context* ctx, uint8_t port, uint8_t sgid_index) {
  using providers::LinkKind;
  if (ctx == nullptr || ctx->device == nullptr) return LinkKind::kUnknown;
  const char* device = ctx->device->name;
  const uint64_t now = coarse_now_ms();
  // A GID type is only ever kept for an Ethernet port, and a port's link layer never changes:
  // a fresh one answers without looking the link layer up (every RTR transition asks).
  if (auto known = fresh_value(gid_types.find(device, port, sgid_index), now))
    return static_cast<LinkKind>(*known);
  int link = port_link_layer(ctx, port);
  if (link == IBV_LINK_LAYER_INFINIBAND) return LinkKind::kInfiniBand;
  if (link != IBV_LINK_LAYER_ETHERNET) return LinkKind::kUnknown;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(ctx, port, sgid_index, &entry, 0) != 0) return LinkKind::kUnknown;
  LinkKind kind = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? LinkKind::kRoceV2 : LinkKind::kRoceV1;
  gid_types.put(device, port, sgid_index, timed_word(static_cast<uint16_t>(kind), now));
  return kind;
}

uint16_t port_lid(ibv_context* ctx, uint8_t port) {
  if (ctx == nullptr || ctx->device == nullptr || port == 0) return 0;
  const char* device = ctx->device->name;
  const uint64_t now = coarse_now_ms();
  if (auto known = fresh_value(port_lids.find(device, port, 0), now)) return *known;
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa) != 0) return 0;
  port_lids.put(device, port, 0, timed_word(pa.lid, now));
  return pa.lid;
}

std::optional<uint16_t> port_pkey(ibv_context* ctx, uint8_t port, uint16_t index) {
  if (ctx == nullptr || ctx->device == nullptr || port == 0) return std::nullopt;
  const char* device = ctx->device->name;
  const uint64_t now = coarse_now_ms();
  if (index <= 0xFF)
    if (auto known = fresh_value(port_pkeys.find(device, port, static_cast<uint8_t>(index)), now))
      return *known;
  auto query = real_verbs().query_pkey;  // through the table, so tests stand in for it
  __be16 raw = 0;
  if (query == nullptr || query(ctx, port, index, &raw) != 0) return std::nullopt;
  uint16_t pkey = be16toh(raw);
  if (pkey == 0) return std::nullopt;  // an empty slot: no partition to name
  if (index <= 0xFF)
    port_pkeys.put(device, port, static_cast<uint8_t>(index), timed_word(pkey, now));
  return pkey;
}

uint8_t qp_port(ibv_qp* qp) {
  const auto attr = query_qp(qp, IBV_QP_PORT);
  return attr ? attr->port_num : 0;
}

uint16_t qp_pkey_index(ibv_qp* qp) {
  const auto attr = query_qp(qp, IBV_QP_PKEY_INDEX);
  return attr ? attr->pkey_index : 0;
}

void lock_ports_for_fork() {
  port_tables_mutex.lock();
}

void unlock_ports_after_fork() {
  port_tables_mutex.unlock();
}

}  // namespace rdmaqos::preload
