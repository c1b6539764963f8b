// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Formatting of policy diagnostics in the compiler style tools and editors understand.
#include "rdma-qos/policy/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>

namespace rdmaqos::policy {

std::string format_diagnostic(const Diagnostic& d, const std::string& file) {
  std::string out = fmt::format("{}:{}:{}: {}: {}", file, d.location.line, d.location.column,
                                d.severity == Severity::kError ? "error" : "warning", d.message);
  if (!d.hint.empty()) out += fmt::format("\n  hint: {}", d.hint);
  return out;
}

bool has_errors(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

bool has_warnings(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kWarning; });
}

}  // namespace rdmaqos::policy
