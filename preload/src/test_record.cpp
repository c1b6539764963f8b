// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The test hook's file writer (see test_record.h).
#include "test_record.h"

#include <cstdio>
#include <mutex>

namespace rdmaqos::preload {

void append_record(const std::string& path, const std::string& line) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (FILE* f = fopen(path.c_str(), "a")) {
    fprintf(f, "%s\n", line.c_str());
    fclose(f);
  }
}

void append_record(const std::string& path, const Record& record) {
  append_record(path, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace rdmaqos::preload
