// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemons' logger: stderr lines with journal priorities, syslog, one level filter.
#include "rdma-qos/common/log.h"

#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rdmaqos::common {

std::string_view priority_name(Priority p) {
  switch (p) {
    case Priority::kError: return "error";
    case Priority::kWarning: return "warning";
    case Priority::kNotice: return "notice";
    case Priority::kInfo: return "info";
    case Priority::kDebug: return "debug";
  }
  return "info";
}

bool parse_priority(std::string_view text, Priority& out) {
  if (text == "error")
    out = Priority::kError;
  else if (text == "warn" || text == "warning")
    out = Priority::kWarning;
  else if (text == "notice")
    out = Priority::kNotice;
  else if (text == "info")
    out = Priority::kInfo;
  else if (text == "debug")
    out = Priority::kDebug;
  else
    return false;
  return true;
}

bool stderr_is_journal() {
  // systemd.exec(5): JOURNAL_STREAM is "DEVICE:INODE" of the stream stdout/stderr were
  // connected to; a redirected stderr (2>file) no longer matches it.
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

std::string format_line(std::string_view ident, Priority p, std::string_view message, bool journal,
                        bool name_level) {
  if (journal) return fmt::format("<{}>{}\n", static_cast<int>(p), message);
  if (name_level && p <= Priority::kWarning)
    return fmt::format("{}: {}: {}\n", ident, priority_name(p), message);
  return fmt::format("{}: {}\n", ident, message);
}

Logger::Logger(std::string ident) : ident_(std::move(ident)) {
  journal_ = stderr_is_journal();
}

void Logger::set_stderr(bool on) {
  stderr_ = on;
  journal_ = on && stderr_is_journal();
}

void Logger::set_syslog(bool on) {
  if (on && !syslog_) openlog(ident_.c_str(), LOG_PID, LOG_DAEMON);
  syslog_ = on;
}

void Logger::log(Priority p, std::string_view message) const {
  write(p, message, true);
}

void Logger::diagnostic(Priority p, std::string_view message) const {
  write(p, message, false);
}

void Logger::write(Priority p, std::string_view message, bool name_level) const {
  if (p > max_.load()) return;
  if (stderr_) {
    // One write per line, so lines of two threads never interleave.
    std::string line = format_line(ident_, p, message, journal_, name_level);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  if (syslog_) {
    std::string text(message);
    syslog(static_cast<int>(p), "%s", text.c_str());
  }
}

}  // namespace rdmaqos::common
