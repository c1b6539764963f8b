// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Loading the module's configuration and the host policy, once (see config.h).
#include "config.h"

#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "log.h"
#include "rdma-qos/config/knobs.h"
#include "rdma-qos/config/read_file.h"

namespace rdmaqos::preload {
namespace {

void load_policy(const config::HostConfig& c, CmConfig& out) {
  const auto& file = c.get("policy_file");
  // Non-blocking, regular files only, bounded: a FIFO or device named here must not hang
  // every program the preload is loaded into.
  auto read = config::read_regular_file(file.text, config::kMaxPolicyFileBytes);
  if (!read) {
    const Error& err = read.error();
    // The default file is optional; one named by the administrator must be readable.
    if (file.source != config::Source::kDefault || err.code != ErrorCode::kNotFound)
      log_once("policy_open", fmt::format("cannot read the policy file {} ({}); rdma_cm "
                                          "connections keep the stock QoS",
                                          file.text, err.message));
    return;
  }
  rdmacm::HostPolicy p = rdmacm::load_host_policy(*read, file.text);
  for (const auto& m : p.messages) log_once(m, m);
  if (!p.policy)
    log_once_at(
        Priority::kError, "policy_errors",
        fmt::format("the policy {} has errors; rdma_cm connections keep the stock QoS", file.text));
  out.settings.policy = p.policy;
  rdmacm::index_passive_classes(out.settings);
  // Connections to a service already matched look the level up instead of matching again.
  rdmacm::cache_matches(out.settings);
}

}  // namespace

const config::HostConfig* preload_config() {
  static const config::HostConfig* loaded = []() -> const config::HostConfig* {
    try {
      auto r = config::load_host_config();
      // A rejected value leaves the one it would have replaced (the file's, or the default):
      // say so without guessing which.
      for (const auto& e : r.errors) {
        const std::string line = format_diagnostic(e);
        log_once(line, line + " (ignored; 'rdma-qos env' shows the value in use)");
      }
      return new config::HostConfig(std::move(r.config));
    } catch (...) {
      log_once("config", "cannot load the host configuration; using defaults");
      return nullptr;
    }
  }();
  return loaded;
}

const CmConfig& cm_config() {
  static CmConfig* loaded = [] {
    auto* out = new CmConfig;
    try {
      const config::HostConfig* c = preload_config();
      if (c == nullptr) return out;
      for (const auto& k : config::knobs())
        if (!k.deprecated_env.empty() && c->get(k.key).origin == k.deprecated_env)
          log_once_at(Priority::kWarning, std::string(k.deprecated_env),
                      fmt::format("{} is a deprecated name; use {}", k.deprecated_env, k.env));
      out->settings = rdmacm::cm_settings_from(*c);
      out->record_path = c->text("test_record");
      out->sa = c->text("sa") == "off"  ? CmConfig::Sa::kOff
                : c->text("sa") == "on" ? CmConfig::Sa::kOn
                                        : CmConfig::Sa::kAuto;
      out->mpr = c->text("mpr") == "1";
      if (auto f = providers::parse_flow_label_setting(c->text("flow_label"))) out->flow_label = *f;
      // An invalid value was reported by the loader, which keeps the default (none).
      if (auto lids = config::parse_port_lids(c->text("sa_lid"))) out->sa_lids = std::move(*lids);
      out->sa_options.timeout = std::chrono::milliseconds(c->number("sa_timeout_ms"));
      out->sa_options.retries = static_cast<int>(c->number("sa_retries"));
      out->sa_backoff = std::chrono::seconds(c->number("sa_backoff"));
      out->path_service = c->text("path_service");
      out->sa_options.class_port_info_retry_after = out->sa_backoff;
      if (auto ttl = c->number("cache_ttl")) {
        out->path_cache.emplace();
        out->path_cache->ttl = std::chrono::seconds(ttl);
        out->path_cache->capacity = 1024;
      }
      load_policy(*c, *out);
    } catch (...) {
      log_once_at(Priority::kError, "cm_config",
                  "cannot load the rdma_cm settings; stock behaviour");
    }
    return out;
  }();
  return *loaded;
}

namespace {
// The configuration and the policy are read when the program starts, not inside its first
// connection setup (parsing and compiling a policy costs milliseconds).
__attribute__((constructor)) void load_at_start() {
  try {
    cm_config();
  } catch (...) {
  }
}
}  // namespace

}  // namespace rdmaqos::preload
