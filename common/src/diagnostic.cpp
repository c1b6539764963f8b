// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Formatting of diagnostics in the compiler style tools and editors understand.
#include "rdma-qos/common/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>

namespace rdmaqos {

std::string format_diagnostic(const Diagnostic& d, const std::string& origin) {
  std::string out = origin;
  if (d.location.line > 0) {
    out += fmt::format(":{}", d.location.line);
    if (d.location.column > 0) out += fmt::format(":{}", d.location.column);
  }
  out += fmt::format(": {}: {}", d.severity == Severity::kError ? "error" : "warning", d.message);
  if (!d.hint.empty()) out += fmt::format("\n  hint: {}", d.hint);
  return out;
}

std::string format_diagnostic(const Diagnostic& d) {
  return format_diagnostic(d, d.origin);
}

bool has_errors(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

bool has_warnings(const Diagnostics& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kWarning; });
}

}  // namespace rdmaqos
