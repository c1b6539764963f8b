// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Diagnostics of the policy engine: every problem found in a policy, partitions or fabric file,
// with its location, returned to the caller (the library never prints).
#pragma once

#include <string>
#include <vector>

namespace rdmaqos::policy {

enum class Severity { kWarning, kError };

struct SourceLocation {
  int line = 1;    // 1-based
  int column = 1;  // 1-based
};

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLocation location;
  std::string message;
  std::string hint;  // empty when no hint helps
};

using Diagnostics = std::vector<Diagnostic>;

// "FILE:LINE:COL: error: message" (plus "\n  hint: ..." when there is a hint).
std::string format_diagnostic(const Diagnostic& d, const std::string& file);

bool has_errors(const Diagnostics& diagnostics);
bool has_warnings(const Diagnostics& diagnostics);

}  // namespace rdmaqos::policy
