// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's log: stderr lines prefixed "rdma-qos[PID]: ", filtered by the log_level knob
// (RDMA_QOS_LOG), most of them once per process and key so a condition met on every connection
// is reported once.
#pragma once

#include <string>

#include "rdma-qos/common/log.h"

namespace rdmaqos::preload {

// The project's one level vocabulary (syslog priorities, rdma-qos/common/log.h): the log_level
// knob (error, warn, info, debug) prints the lines at or above its level.
using common::Priority;

bool log_enabled(Priority level);
// Every time (per-connection detail, for debug and info), when the level lets it through.
void log_at(Priority level, const std::string& message) noexcept;
// Once per process and key, when the level lets it through.
void log_once_at(Priority level, const std::string& key, const std::string& message) noexcept;
// A warning, once per key.
void log_once(const std::string& key, const std::string& message) noexcept;

// The log's lock, for the module's fork handlers (fork_guard.cpp).
void lock_log_for_fork();
// Reads the log level and makes the set of logged keys now (at load, while the program has one
// thread), so that no other thread is still making them when the program forks.
void init_log_at_load() noexcept;
void unlock_log_after_fork();

}  // namespace rdmaqos::preload
