// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Host configuration loading: file, then environment (see host_config.h).
#include "rdma-qos/config/host_config.h"

#include "rdma-qos/common/number.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

#include "rdma-qos/config/knobs.h"
#include "rdma-qos/config/read_file.h"

namespace rdmaqos::config {

struct Loader {
  static void set_defaults(HostConfig& c) {
    for (const auto& k : knobs())
      c.values_[std::string(k.key)] = Value{std::string(k.default_value), Source::kDefault, ""};
  }
  static void set(HostConfig& c, std::string_view key, Value v) {
    c.values_[std::string(key)] = std::move(v);
  }
  static void set_path(HostConfig& c, std::string path, bool found) {
    c.path_ = std::move(path);
    c.file_found_ = found;
  }
  static void set_path_source(HostConfig& c, Source source) { c.path_source_ = source; }
};

namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// A knob's reason quotes the rejected value (or a part of it); from a file that is the file's
// text, which is not copied into a diagnostic (see apply_file): each quoted part of the value
// is dropped ("'x': why" becomes "why") or replaced ("'x' is not" becomes "the value is not").
std::string redact_value(std::string why, std::string_view value) {
  size_t open = 0;
  while ((open = why.find('\'', open)) != std::string::npos) {
    size_t close = why.find('\'', open + 1);
    if (close == std::string::npos) break;
    std::string_view quoted = std::string_view(why).substr(open + 1, close - open - 1);
    if (quoted.empty() || value.find(quoted) == std::string_view::npos) {
      open = close + 1;
      continue;
    }
    if (why.compare(close + 1, 2, ": ") == 0)
      why.erase(open, close + 3 - open);
    else
      why.replace(open, close + 1 - open, "the value");
  }
  return why;
}

// A problem on one line of the file ("FILE:LINE: error: ...": the line has no column of note).
Diagnostic file_error(std::string_view file, size_t line_no, std::string message) {
  return {
      Severity::kError, {static_cast<int>(line_no), 0}, std::move(message), "", std::string(file)};
}

// A problem with a whole variable or file ("NAME: error: ...").
Diagnostic whole_origin(Severity severity, std::string_view origin, std::string message) {
  return {severity, {0, 0}, std::move(message), "", std::string(origin)};
}

void apply_file(HostConfig& c, std::string_view text, std::string_view file,
                std::vector<Diagnostic>& errors) {
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    // '#' starts a comment anywhere: no value of ours contains one.
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    size_t sep = line.find_first_of(" \t");
    std::string_view key = line.substr(0, sep);
    std::string_view value =
        sep == std::string_view::npos ? std::string_view{} : trim(line.substr(sep));
    const Knob* knob = find_knob(key);
    if (knob == nullptr) {
      // The file may not be ours (RDMA_QOS_CONFIG can name any file): never copy its text.
      errors.push_back(file_error(
          file, line_no, "not a known key (expected 'key value'; rdma-qos env lists the keys)"));
      continue;
    }
    if (knob->environment_only) {
      errors.push_back(file_error(
          file, line_no, fmt::format("{} is read from the environment only ({})", key, knob->env)));
      continue;
    }
    if (auto valid = knob->validate(value); !valid) {
      errors.push_back(file_error(
          file, line_no, fmt::format("{}: {}", key, redact_value(valid.error().message, value))));
      continue;
    }
    Loader::set(c, key,
                Value{std::string(value), Source::kFile, fmt::format("{}:{}", file, line_no)});
  }
}

void apply_env(HostConfig& c, EnvLookup env, LoadResult& r) {
  for (const auto& k : knobs()) {
    std::string_view name = k.env;
    auto v = env(name);
    if (!v && !k.deprecated_env.empty() && (v = env(k.deprecated_env))) {
      name = k.deprecated_env;
      r.warnings.push_back(whole_origin(Severity::kWarning, k.deprecated_env,
                                        fmt::format("deprecated name; use {}", k.env)));
    }
    if (!v) continue;
    std::string value(trim(*v));
    if (auto valid = k.validate(value); !valid) {
      r.errors.push_back(whole_origin(Severity::kError, name, valid.error().message));
      continue;
    }
    Loader::set(c, k.key, Value{value, Source::kEnvironment, std::string(name)});
  }
}

}  // namespace

std::string_view to_string(Source s) {
  switch (s) {
    case Source::kDefault: return "default";
    case Source::kFile: return "file";
    case Source::kEnvironment: return "environment";
  }
  return "?";
}

const Value& HostConfig::get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::out_of_range(fmt::format("no configuration knob '{}'", key));
  return it->second;
}

uint64_t HostConfig::number(std::string_view key) const {
  const Knob* knob = find_knob(key);
  if (knob == nullptr || !knob->range)
    throw std::logic_error(fmt::format("configuration knob '{}' is not numeric", key));
  const NumberRange r = *knob->range;
  auto within = [r](std::string_view t) -> std::optional<uint64_t> {
    auto n = parse_unsigned(t, r.max);
    if (n && *n >= r.min) return n;
    return std::nullopt;
  };
  if (auto n = within(text(key))) return *n;
  return within(knob->default_value).value_or(r.min);  // a test keeps every default in range
}

std::optional<uint64_t> HostConfig::optional_number(std::string_view key) const {
  const Knob* knob = find_knob(key);
  if (knob == nullptr || !knob->range)
    throw std::logic_error(fmt::format("configuration knob '{}' is not numeric", key));
  auto n = parse_unsigned(text(key), knob->range->max);
  if (n && *n >= knob->range->min) return n;
  return std::nullopt;
}

std::optional<std::string> process_env(std::string_view name) {
  // secure_getenv: in a setuid or otherwise AT_SECURE program the caller's variables are not
  // the administrator's, so none of them steers it (files and defaults still apply).
  const char* v =
      secure_getenv(std::string(name).c_str());  // NOLINT(concurrency-mt-unsafe): read-only
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

LoadResult parse_host_config(std::string_view text, std::string_view file_name, EnvLookup env) {
  LoadResult r;
  Loader::set_defaults(r.config);
  Loader::set_path(r.config, std::string(file_name), true);
  apply_file(r.config, text, file_name, r.errors);
  apply_env(r.config, env, r);
  return r;
}

LoadResult load_host_config(EnvLookup env, std::optional<std::string> path) {
  bool explicit_path = path.has_value();
  Source source = explicit_path ? Source::kFile : Source::kDefault;
  if (!path) {
    if (auto p = env(kConfigEnv); p && !p->empty()) {
      path = *p;
      explicit_path = true;
      source = Source::kEnvironment;
    } else {
      path = std::string(kDefaultConfigPath);
    }
  }
  auto read = read_regular_file(*path, kMaxConfigFileBytes);
  if (!read) {
    const Error& err = read.error();
    LoadResult r;
    Loader::set_defaults(r.config);
    Loader::set_path(r.config, *path, false);
    Loader::set_path_source(r.config, source);
    // A missing default file is not an error; anything else wrong with a file is.
    if (explicit_path || err.code != ErrorCode::kNotFound)
      r.errors.push_back(
          whole_origin(Severity::kError, *path,
                       fmt::format("cannot read the configuration file: {}", err.message)));
    apply_env(r.config, env, r);
    return r;
  }
  LoadResult r = parse_host_config(*read, *path, env);
  Loader::set_path_source(r.config, source);
  return r;
}

}  // namespace rdmaqos::config
