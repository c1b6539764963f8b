// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one diagnostic form: where it points (file, line, column or a variable) decides the
// prefix; the severity and hint read as a compiler's would.
#include "rdma-qos/common/diagnostic.h"

#include <gtest/gtest.h>

namespace rdmaqos {
namespace {

TEST(Diagnostic, AFilePositionReadsAsACompilersLine) {
  Diagnostic d{Severity::kError, {3, 7}, "unknown key", "", ""};
  EXPECT_EQ(format_diagnostic(d, "qos-policy.conf"), "qos-policy.conf:3:7: error: unknown key");
}

TEST(Diagnostic, TheHintFollowsOnItsOwnLine) {
  Diagnostic d{Severity::kWarning, {1, 1}, "sl 16 out of range", "SLs are 0..15", ""};
  EXPECT_EQ(format_diagnostic(d, "p"), "p:1:1: warning: sl 16 out of range\n  hint: SLs are 0..15");
}

TEST(Diagnostic, AWholeLineHasNoColumnAndAVariableNoLine) {
  Diagnostic line{Severity::kError, {4, 0}, "tos: not a number", "", "/etc/rdma/rdma-qos.conf"};
  EXPECT_EQ(format_diagnostic(line), "/etc/rdma/rdma-qos.conf:4: error: tos: not a number");
  Diagnostic var{Severity::kWarning, {0, 0}, "deprecated name", "", "RDMA_QOS_LOG"};
  EXPECT_EQ(format_diagnostic(var), "RDMA_QOS_LOG: warning: deprecated name");
}

TEST(Diagnostic, ErrorsAndWarningsAreCountedApart) {
  Diagnostics none;
  EXPECT_FALSE(has_errors(none));
  Diagnostics some{{Severity::kWarning, {}, "w", "", ""}};
  EXPECT_TRUE(has_warnings(some));
  EXPECT_FALSE(has_errors(some));
  some.push_back({Severity::kError, {}, "e", "", ""});
  EXPECT_TRUE(has_errors(some));
}

}  // namespace
}  // namespace rdmaqos
