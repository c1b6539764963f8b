// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one user-facing form of a problem found in something an administrator wrote: a policy or
// partitions file, the host configuration file, an environment variable, a plugin argument.
// Libraries return them; programs print them (format_diagnostic) in the compiler style editors
// and tools understand: "FILE:LINE:COL: error: message".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rdmaqos {

enum class Severity { kWarning, kError };

struct SourceLocation {
  int line = 1;    // 1-based; 0: the origin has no lines (an environment variable)
  int column = 1;  // 1-based; 0: the whole line
};

struct Diagnostic {
  Diagnostic() = default;
  // The parsers' {severity, location, message[, hint]} and the loaders' with an origin.
  Diagnostic(Severity s, SourceLocation at, std::string text, std::string help = {},
             std::string from = {})
      : severity(s),
        location(at),
        message(std::move(text)),
        hint(std::move(help)),
        origin(std::move(from)) {}

  Severity severity = Severity::kError;
  SourceLocation location;
  std::string message;
  std::string hint;    // empty when no hint helps
  std::string origin;  // the file or variable; empty when the caller names it (below)
};

using Diagnostics = std::vector<Diagnostic>;

// "ORIGIN:LINE:COL: error: message", without ":COL" when the column is 0 and without
// ":LINE:COL" when the line is 0, plus "\n  hint: ..." when there is a hint. `origin` names
// the file when the diagnostic does not (a parser is given text, its caller knows the file).
std::string format_diagnostic(const Diagnostic& d, const std::string& origin);
std::string format_diagnostic(const Diagnostic& d);

bool has_errors(const Diagnostics& diagnostics);
bool has_warnings(const Diagnostics& diagnostics);

}  // namespace rdmaqos
