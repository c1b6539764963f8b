// The preload module's verbs layer: interposes ibv_modify_qp, ibv_create_ah and ibv_destroy_qp
// in unmodified programs (LD_PRELOAD, see rdma-qos-run). An unversioned definition here wins
// over libibverbs' versioned one, for the program and for librdmacm alike. Nothing may escape:
// on any failure it logs once and calls the real function as the program asked.
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "preload_common.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/providers/verbs_interposer.h"

namespace rdmaqos::providers {

// Shared with the rdma_cm layer (preload_common.h): one log, one configuration per process.
// The level is read from the configuration here, not through preload_config(): that reports its
// own errors through this log while it loads. A bad value was reported there; warn is used.
namespace {
LogLevel configured_log_level() {
  static const LogLevel level = [] {
    try {
      const std::string text = config::load_host_config().config.text("log_level");
      if (text == "error") return LogLevel::kError;
      if (text == "info") return LogLevel::kInfo;
      if (text == "debug") return LogLevel::kDebug;
    } catch (...) {
    }
    return LogLevel::kWarn;
  }();
  return level;
}

std::mutex log_mutex;
}  // namespace

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(configured_log_level());
}

// Both are called from the interposers' catch blocks, right at the C boundary: nothing may
// escape them (a full set of seen keys or a failed lock only loses the line).
void log_at(LogLevel level, const std::string& message) noexcept {
  try {
    if (!log_enabled(level)) return;
    std::lock_guard lock(log_mutex);
    fprintf(stderr, "rdma-qos[%d]: %s\n", static_cast<int>(getpid()), message.c_str());
  } catch (...) {
  }
}

void log_once_at(LogLevel level, const std::string& key, const std::string& message) noexcept {
  try {
    if (!log_enabled(level)) return;
    static std::set<std::string>* seen = new std::set<std::string>;
    std::lock_guard lock(log_mutex);
    if (!seen->insert(key).second) return;
    fprintf(stderr, "rdma-qos[%d]: %s\n", static_cast<int>(getpid()), message.c_str());
  } catch (...) {
  }
}

void log_once_impl(const std::string& key, const std::string& message) noexcept {
  log_once_at(LogLevel::kWarn, key, message);
}

void record_impl(const std::string& path, const std::string& line) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (FILE* f = fopen(path.c_str(), "a")) {
    fprintf(f, "%s\n", line.c_str());
    fclose(f);
  }
}

const config::HostConfig* preload_config() {
  static const config::HostConfig* loaded = []() -> const config::HostConfig* {
    try {
      auto r = config::load_host_config();
      // A rejected value leaves the one it would have replaced (the file's, or the default):
      // say so without guessing which.
      for (const auto& e : r.errors)
        log_once_impl(e.message, e.message + " (ignored; 'rdma-qos env' shows the value in use)");
      return new config::HostConfig(std::move(r.config));
    } catch (...) {
      log_once_impl("config", "cannot load the host configuration; using defaults");
      return nullptr;
    }
  }();
  return loaded;
}

namespace {

// A small table keyed by device name and port, scanned linearly: a host has a handful of ports,
// and under connection setup this runs several times per connection, so it must not allocate.
// Full: the caller queries without caching.
template <typename Value, size_t kSize>
class PortTable {
 public:
  struct Entry {
    char device[IBV_SYSFS_NAME_MAX] = {};
    uint8_t port = 0;
    uint8_t index = 0;  // GID index, for tables keyed by one
    Value value{};
  };
  // The entry for (device, port, index) if present; `fresh` decides whether it still counts.
  template <typename Fresh>
  std::optional<Value> find(const char* device, uint8_t port, uint8_t index, Fresh fresh) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < used_; ++i) {
      const Entry& e = entries_[i];
      if (e.port == port && e.index == index && std::strcmp(e.device, device) == 0)
        return fresh(e.value) ? std::optional<Value>(e.value) : std::nullopt;
    }
    return std::nullopt;
  }
  void put(const char* device, uint8_t port, uint8_t index, Value value) {
    std::lock_guard lock(mutex_);
    Entry* slot = nullptr;
    for (size_t i = 0; i < used_ && slot == nullptr; ++i)
      if (entries_[i].port == port && entries_[i].index == index &&
          std::strcmp(entries_[i].device, device) == 0)
        slot = &entries_[i];
    if (slot == nullptr) {
      if (used_ == kSize || std::strlen(device) >= sizeof slot->device) return;
      slot = &entries_[used_++];
      std::strcpy(slot->device, device);
      slot->port = port;
      slot->index = index;
    }
    slot->value = value;
  }

 private:
  std::mutex mutex_;
  std::array<Entry, kSize> entries_{};
  size_t used_ = 0;
};

}  // namespace

int port_link_layer(ibv_context* ctx, uint8_t port) {
  if (ctx == nullptr || ctx->device == nullptr || port == 0) return -1;
  static auto* cache = new PortTable<int, 32>;
  const char* device = ctx->device->name;
  if (auto link = cache->find(device, port, 0, [](int) { return true; })) return *link;
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa) != 0) return -1;
  cache->put(device, port, 0, pa.link_layer);
  return pa.link_layer;
}

namespace {

// The real functions, by the version librdmacm and current programs link against.
template <typename Fn>
Fn next_symbol(const char* name) {
  void* sym = dlvsym(RTLD_NEXT, name, "IBVERBS_1.1");
  if (sym == nullptr) sym = dlsym(RTLD_NEXT, name);
  return reinterpret_cast<Fn>(sym);
}

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
constexpr uint64_t kGidTypeTtlMs = 1000;

struct GidType {
  LinkKind kind = LinkKind::kUnknown;
  uint64_t when_ms = 0;
};

LinkKind probe_link(ibv_context* ctx, uint8_t port, uint8_t sgid_index) {
  int link = port_link_layer(ctx, port);
  if (link == IBV_LINK_LAYER_INFINIBAND) return LinkKind::kInfiniBand;
  if (link != IBV_LINK_LAYER_ETHERNET) return LinkKind::kUnknown;
  static auto* cache = new PortTable<GidType, 64>;
  const char* device = ctx->device->name;
  const uint64_t now = coarse_now_ms();
  auto fresh = [now](const GidType& g) { return now - g.when_ms < kGidTypeTtlMs; };
  if (auto known = cache->find(device, port, sgid_index, fresh)) return known->kind;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(ctx, port, sgid_index, &entry, 0) != 0) return LinkKind::kUnknown;
  LinkKind kind = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? LinkKind::kRoceV2 : LinkKind::kRoceV1;
  cache->put(device, port, sgid_index, GidType{kind, now});
  return kind;
}

uint8_t probe_qp_port(ibv_qp* qp) {
  using QueryQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
  static QueryQpFn query = next_symbol<QueryQpFn>("ibv_query_qp");
  if (query == nullptr) return 0;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (query(qp, &attr, IBV_QP_PORT, &init) != 0) return 0;
  return attr.port_num;
}

// Loaded on first use, once: the host configuration and the environment.
const InterposerHooks& hooks() {
  static InterposerHooks* h = [] {
    auto* out = new InterposerHooks;
    out->log_once = &log_once_impl;
    out->probe.link_kind = &probe_link;
    out->probe.qp_port = &probe_qp_port;
    out->rate_limit = [](ibv_qp* qp, uint32_t kbps) {
      ibv_qp_rate_limit_attr a{};
      a.rate_limit = kbps;
      return ibv_modify_qp_rate_limit(qp, &a);
    };
    try {
      const config::HostConfig* loaded = preload_config();
      if (loaded == nullptr) return out;
      const auto& c = *loaded;
      out->settings = verbs_settings_from(c.text("flow_label"), c.text("sl"), c.text("tclass"),
                                          c.text("apply_on_ib"));
      std::string record_path = c.text("test_record");
      if (!record_path.empty())
        out->record = [record_path](const std::string& line) { record_impl(record_path, line); };
    } catch (...) {
      log_once_impl("config", "cannot load the host configuration; using defaults");
    }
    return out;
  }();
  return *h;
}

}  // namespace
}  // namespace rdmaqos::providers

using rdmaqos::providers::CreateAhFn;
using rdmaqos::providers::ModifyQpFn;

extern "C" {

__attribute__((visibility("default"))) int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  static ModifyQpFn next = rdmaqos::providers::next_symbol<ModifyQpFn>("ibv_modify_qp");
  if (next == nullptr) return EOPNOTSUPP;  // no libibverbs behind us: nothing could succeed
  rdmaqos::providers::ModifyQpCall call(next, qp, attr, mask);
  try {
    return rdmaqos::providers::interpose_modify_qp(call, rdmaqos::providers::hooks());
  } catch (...) {
    rdmaqos::providers::log_once_impl("modify_qp_exception",
                                      "internal error in ibv_modify_qp; QPs left unchanged");
    return call.finish();  // the provider's answer, if it already gave one
  }
}

__attribute__((visibility("default"))) ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  static CreateAhFn next = rdmaqos::providers::next_symbol<CreateAhFn>("ibv_create_ah");
  if (next == nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  rdmaqos::providers::CreateAhCall call(next, pd, attr);
  try {
    return rdmaqos::providers::interpose_create_ah(call, rdmaqos::providers::hooks());
  } catch (...) {
    rdmaqos::providers::log_once_impl("create_ah_exception",
                                      "internal error in ibv_create_ah; AHs left unchanged");
    return call.finish();  // the provider's answer, if it already gave one
  }
}

__attribute__((visibility("default"))) int ibv_destroy_qp(ibv_qp* qp) {
  using DestroyQpFn = int (*)(ibv_qp*);
  static DestroyQpFn next = rdmaqos::providers::next_symbol<DestroyQpFn>("ibv_destroy_qp");
  if (next == nullptr) return EOPNOTSUPP;
  int rc = next(qp);
  if (rc == 0) {
    try {
      rdmaqos::providers::QpRegistry::instance().erase(qp);
    } catch (...) {
    }
  }
  return rc;
}

}  // extern "C"
