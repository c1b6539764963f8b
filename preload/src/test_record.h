// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The test hook (test_record knob, RDMA_QOS_TEST_RECORD): one JSON line per decision appended
// to a file, so tests on the real kernel see what the module decided without parsing its log.
#pragma once

#include <string>

namespace rdmaqos::preload {

// Appends `line` to `path` (nothing when it cannot be opened). Thread-safe.
void append_record(const std::string& path, const std::string& line);

}  // namespace rdmaqos::preload
