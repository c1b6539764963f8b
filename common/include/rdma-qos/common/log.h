// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemons' one logger: lines to stderr (with journal priorities when stderr is the journal's
// stream) and/or syslog, filtered by a level that may change while the daemon runs.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

namespace rdmaqos::common {

// syslog(3) priorities: the journal reads them from a "<N>" prefix on each stderr line.
enum class Priority { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6, kDebug = 7 };

// "error", "warning", "notice", "info" or "debug"; nullopt-like kInfo fallback is the caller's.
std::string_view priority_name(Priority p);
// Parses "error", "warn"/"warning", "notice", "info", "debug"; false when it is none of them.
bool parse_priority(std::string_view text, Priority& out);

// True when systemd connected stderr to the journal (JOURNAL_STREAM names stderr's device and
// inode), so lines should carry "<N>" priority prefixes instead of the program's name.
bool stderr_is_journal();

// One line as written to stderr: "<3>message" for the journal, "ident: error: message"
// (warnings likewise, info and below without the level) otherwise.
// name_level false: never the level word (a diagnostic "FILE:LINE:COL: error: ..." names its
// severity itself).
std::string format_line(std::string_view ident, Priority p, std::string_view message, bool journal,
                        bool name_level = true);

class Logger {
 public:
  // ident: the program name (syslog's identity and the stderr prefix).
  explicit Logger(std::string ident);

  // Where lines go. to_stderr checks JOURNAL_STREAM once, here.
  void set_stderr(bool on);
  void set_syslog(bool on);  // openlog(ident, LOG_PID, LOG_DAEMON) on first use
  // Lines less urgent than this are dropped; may change at any time (SIGHUP reload).
  void set_max(Priority p) { max_.store(p); }
  Priority max() const { return max_.load(); }

  void log(Priority p, std::string_view message) const;
  // A diagnostic that names its own severity: at priority p, without a second level word.
  void diagnostic(Priority p, std::string_view message) const;
  void error(std::string_view m) const { log(Priority::kError, m); }
  void warning(std::string_view m) const { log(Priority::kWarning, m); }
  void notice(std::string_view m) const { log(Priority::kNotice, m); }
  void info(std::string_view m) const { log(Priority::kInfo, m); }
  void debug(std::string_view m) const { log(Priority::kDebug, m); }

 private:
  void write(Priority p, std::string_view message, bool name_level) const;
  std::string ident_;
  std::atomic<bool> stderr_{true}, journal_{false}, syslog_{false};
  std::atomic<Priority> max_{Priority::kInfo};
};

}  // namespace rdmaqos::common
