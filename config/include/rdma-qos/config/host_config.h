// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Loading the host configuration: the file (`key value` lines, opensm.conf style) with each key
// overridden by its RDMA_QOS_* environment variable. Problems come back as diagnostics naming
// the file and line or the variable; the loader never prints.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"

namespace rdmaqos::config {

enum class Source { kDefault, kFile, kEnvironment };
std::string_view to_string(Source source);

struct Value {
  std::string text;
  Source source = Source::kDefault;
  std::string origin;  // "FILE:LINE" or the variable name; empty for defaults
};

class HostConfig {
 public:
  // The value of a known key (the table's default when nothing set it). Throws
  // std::out_of_range for a key that is not in the table: a programming error.
  const Value& get(std::string_view key) const;
  const std::string& text(std::string_view key) const { return get(key).text; }
  // A numeric knob's value within the bounds the knob table gives it; the table's default
  // when the setting is missing or out of bounds (the loader has reported it). Throws
  // std::logic_error for a key the table does not declare numeric: a programming error.
  uint64_t number(std::string_view key) const;
  // A numeric knob that may be left empty: nullopt when it is (or when its setting was
  // refused), else the value within the table's bounds. Throws std::logic_error as number().
  std::optional<uint64_t> optional_number(std::string_view key) const;
  const std::string& path() const { return path_; }  // the file consulted (may not exist)
  bool file_found() const { return file_found_; }
  // Where path() came from: kDefault, kEnvironment ($RDMA_QOS_CONFIG), or kFile when the
  // caller named it (load_host_config's `path`, `rdma-qos env --config`).
  Source path_source() const { return path_source_; }

 private:
  friend struct Loader;
  std::map<std::string, Value, std::less<>> values_;
  std::string path_;
  bool file_found_ = false;
  Source path_source_ = Source::kDefault;
};

// Reads the environment through this, so tests can pass their own.
using EnvLookup = std::optional<std::string> (*)(std::string_view name);
std::optional<std::string> process_env(std::string_view name);

struct LoadResult {
  HostConfig config;  // always usable: invalid settings keep their defaults
  std::vector<Diagnostic> errors;
  // Accepted, but worth saying: a deprecated variable name was used.
  std::vector<Diagnostic> warnings;
};

// Loads `path` (default: $RDMA_QOS_CONFIG or /etc/rdma/rdma-qos.conf; a missing default file
// is not an error, a missing explicit one is), then applies the environment.
LoadResult load_host_config(EnvLookup env = &process_env,
                            std::optional<std::string> path = std::nullopt);

// Parses configuration text (exposed for tests and the fuzzer).
LoadResult parse_host_config(std::string_view text, std::string_view file_name,
                             EnvLookup env = &process_env);

}  // namespace rdmaqos::config
