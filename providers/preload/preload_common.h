// What the preload module's layers (verbs_preload.cpp, rdmacm_preload.cpp) share: one
// once-per-process log, the test hook's file writer and the host configuration, loaded once.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "rdma-qos/config/host_config.h"

namespace rdmaqos::providers {

// Severities of the module's messages; the log_level knob (RDMA_QOS_LOG) prints those at or
// above it (error < warn < info < debug in verbosity).
enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
// Once per process and key, when the configured level lets `level` through.
void log_once_at(LogLevel level, const std::string& key, const std::string& message) noexcept;
// A warning, once per key.
void log_once_impl(const std::string& key, const std::string& message) noexcept;
// Every time (per-connection detail, for debug and info), when the level lets it through.
void log_at(LogLevel level, const std::string& message) noexcept;
bool log_enabled(LogLevel level);
void record_impl(const std::string& path, const std::string& line);
// Null when the configuration could not be loaded at all (then: stock behaviour).
const config::HostConfig* preload_config();
// The link layer of a device's port (IBV_LINK_LAYER_*), or -1 when it cannot be queried.
// Queried once per device name and port: it never changes, and connection setup would
// otherwise pay several port queries per connection.
int port_link_layer(ibv_context* ctx, uint8_t port);

}  // namespace rdmaqos::providers
