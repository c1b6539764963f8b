// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's once-per-process log (see log.h).
#include "log.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <set>

#include "rdma-qos/config/host_config.h"

namespace rdmaqos::preload {
namespace {

// Read from the configuration here, not through preload_config(): that reports its own errors
// through this log while it loads. A bad value was reported there; warn is used.
Priority configured_log_level() {
  static const Priority level = [] {
    try {
      Priority p = Priority::kWarning;
      if (common::parse_priority(config::load_host_config().config.text("log_level"), p)) return p;
    } catch (...) {
    }
    return Priority::kWarning;
  }();
  return level;
}

std::mutex log_mutex;

// The keys already logged, under log_mutex; never destroyed: atexit handlers may still log.
std::set<std::string>& seen_keys() {
  static auto* seen = new std::set<std::string>;
  return *seen;
}

}  // namespace

bool log_enabled(Priority level) {
  return static_cast<int>(level) <= static_cast<int>(configured_log_level());
}

// These run in the interposers' catch blocks, right at the C boundary: nothing may escape them
// (a full set of seen keys or a failed lock only loses the line).
void log_at(Priority level, const std::string& message) noexcept {
  try {
    if (!log_enabled(level)) return;
    std::lock_guard lock(log_mutex);
    fprintf(stderr, "rdma-qos[%d]: %s\n", static_cast<int>(getpid()), message.c_str());
  } catch (...) {
  }
}

void log_once_at(Priority level, const std::string& key, const std::string& message) noexcept {
  try {
    if (!log_enabled(level)) return;
    std::set<std::string>& seen = seen_keys();
    std::lock_guard lock(log_mutex);
    if (!seen.insert(key).second) return;
    fprintf(stderr, "rdma-qos[%d]: %s\n", static_cast<int>(getpid()), message.c_str());
  } catch (...) {
  }
}

void log_once(const std::string& key, const std::string& message) noexcept {
  log_once_at(Priority::kWarning, key, message);
}

void lock_log_for_fork() {
  log_mutex.lock();
}

void unlock_log_after_fork() {
  log_mutex.unlock();
}

void init_log_at_load() noexcept {
  try {
    configured_log_level();
    seen_keys();
  } catch (...) {
  }
}

}  // namespace rdmaqos::preload
