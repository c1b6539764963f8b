// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemons' logger: the lines it writes for the journal and for a terminal, and how it tells
// that stderr is the journal's stream.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "rdma-qos/common/log.h"

namespace rdmaqos::common {
namespace {

TEST(Log, JournalLinesCarryThePriorityPrefix) {
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kError, "bad policy", true), "<3>bad policy\n");
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kWarning, "w", true), "<4>w\n");
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kInfo, "answering", true), "<6>answering\n");
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kDebug, "d", true), "<7>d\n");
}

TEST(Log, TerminalLinesNameTheProgramAndUrgentLevels) {
  EXPECT_EQ(format_line("rdma-qos-lsd", Priority::kError, "x", false), "rdma-qos-lsd: error: x\n");
  EXPECT_EQ(format_line("rdma-qos-lsd", Priority::kWarning, "x", false),
            "rdma-qos-lsd: warning: x\n");
  EXPECT_EQ(format_line("rdma-qos-lsd", Priority::kInfo, "x", false), "rdma-qos-lsd: x\n");
}

// A diagnostic names its own severity ("FILE:LINE:COL: error: ..."): no second level word.
TEST(Log, DiagnosticsAreNotGivenASecondLevelWord) {
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kError, "p.conf:2:3: error: x", false, false),
            "rdma-qos-sad: p.conf:2:3: error: x\n");
  EXPECT_EQ(format_line("rdma-qos-sad", Priority::kError, "p.conf:2:3: error: x", true, false),
            "<3>p.conf:2:3: error: x\n");
}

TEST(Log, LevelNamesParse) {
  Priority p = Priority::kInfo;
  EXPECT_TRUE(parse_priority("warn", p));
  EXPECT_EQ(p, Priority::kWarning);
  EXPECT_TRUE(parse_priority("debug", p));
  EXPECT_EQ(p, Priority::kDebug);
  EXPECT_FALSE(parse_priority("loud", p));
}

// JOURNAL_STREAM names the stream systemd connected; a stderr redirected elsewhere is not it.
TEST(Log, StderrIsTheJournalOnlyWhenJournalStreamNamesIt) {
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(stderr_is_journal());
  setenv("JOURNAL_STREAM", "1:2", 1);
  EXPECT_FALSE(stderr_is_journal());
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal());
}

}  // namespace
}  // namespace rdmaqos::common
