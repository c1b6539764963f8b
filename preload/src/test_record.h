// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The test hook (test_record knob, RDMA_QOS_TEST_RECORD): one JSON line per decision appended
// to a file, so tests on the real kernel see what the module decided without parsing its log.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rdmaqos::preload {

// A record: its fields keep the order they were added in, so every line reads alike.
using Record = nlohmann::ordered_json;

// Appends `line` to `path` (nothing when it cannot be opened). Thread-safe.
void append_record(const std::string& path, const std::string& line);
// Appends `record` as one JSON line; text that is not UTF-8 (a level name from a policy file)
// is replaced, never a reason to throw.
void append_record(const std::string& path, const Record& record);

// The writer's lock, for the module's fork handlers (fork_guard.cpp).
void lock_records_for_fork();
void unlock_records_after_fork();

}  // namespace rdmaqos::preload
