// The preload module's verbs layer: interposes ibv_modify_qp, ibv_create_ah and ibv_destroy_qp
// in unmodified programs (LD_PRELOAD, see rdma-qos-run). An unversioned definition here wins
// over libibverbs' versioned one, for the program and for librdmacm alike. Nothing may escape:
// on any failure it logs once and calls the real function as the program asked.
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
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

int port_link_layer(ibv_context* ctx, uint8_t port) {
  if (ctx == nullptr || ctx->device == nullptr || port == 0) return -1;
  static std::mutex mutex;
  static auto* cache = new std::map<std::pair<std::string, uint8_t>, int>;
  std::pair<std::string, uint8_t> key{ibv_get_device_name(ctx->device), port};
  {
    std::lock_guard lock(mutex);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa) != 0) return -1;
  std::lock_guard lock(mutex);
  (*cache)[key] = pa.link_layer;
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

LinkKind probe_link(ibv_context* ctx, uint8_t port, uint8_t sgid_index) {
  int link = port_link_layer(ctx, port);
  if (link == IBV_LINK_LAYER_INFINIBAND) return LinkKind::kInfiniBand;
  if (link != IBV_LINK_LAYER_ETHERNET) return LinkKind::kUnknown;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(ctx, port, sgid_index, &entry, 0) != 0) return LinkKind::kUnknown;
  return entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? LinkKind::kRoceV2 : LinkKind::kRoceV1;
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
