// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The test hook's file writer (see test_record.h).
#include "test_record.h"

#include <cstdio>
#include <mutex>

namespace rdmaqos::preload {

namespace {
std::mutex record_mutex;
}  // namespace

void append_record(const std::string& path, const std::string& line) {
  std::lock_guard lock(record_mutex);
  if (FILE* f = fopen(path.c_str(), "a")) {
    fprintf(f, "%s\n", line.c_str());
    fclose(f);
  }
}

void append_record(const std::string& path, const Record& record) {
  append_record(path, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void lock_records_for_fork() {
  record_mutex.lock();
}

void unlock_records_after_fork() {
  record_mutex.unlock();
}

}  // namespace rdmaqos::preload
