// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Parsing of the plugin's options string and config file.
#include "rdma-qos/opensm-plugin/options.h"

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "rdma-qos/common/number.h"
#include "rdma-qos/common/result.h"

namespace rdmaqos::osmp {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

constexpr const char* kKeys =
    "policy, partitions, control-socket, control-socket-group, max-records, answer-time-limit, "
    "answer-threads, config";

// One key and value applied, or what is wrong with them (kInvalidArgument: an unknown key, a
// bad value); the caller says where.
Result<void> apply(std::string_view key, std::string_view value, OptionsResult& into, int depth);

void read_config_file(const std::string& path, OptionsResult& into, int depth) {
  if (depth > 2) {
    into.errors.push_back(fmt::format("{}: config files nest too deep", path));
    return;
  }
  std::ifstream in(path);
  if (!in) {
    into.errors.push_back(fmt::format("{}: cannot read the file", path));
    return;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  int line_no = 0;
  std::istringstream lines(s);
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    std::string_view l = line;
    if (auto hash = l.find('#'); hash != std::string_view::npos) l = l.substr(0, hash);
    l = trim(l);
    if (l.empty()) continue;
    size_t cut = l.find_first_of("= \t");
    std::string_view key = trim(l.substr(0, cut));
    std::string_view value =
        cut == std::string_view::npos ? std::string_view{} : trim(l.substr(cut + 1));
    if (!value.empty() && value.front() == '=') value = trim(value.substr(1));
    if (key.empty() || value.empty()) {
      into.errors.push_back(fmt::format("{}:{}: expected 'key value'", path, line_no));
    } else if (auto applied = apply(key, value, into, depth + 1); !applied) {
      into.errors.push_back(fmt::format("{}:{}: {}", path, line_no, applied.error().message));
    }
  }
}

Result<void> apply(std::string_view key, std::string_view value, OptionsResult& into, int depth) {
  std::string k(key);
  for (char& c : k) c = c == '_' ? '-' : c;
  Options& o = into.options;
  // A number from 0 to `max`, else what is wrong with it.
  auto number = [&](uint64_t max, const char* what) -> Result<uint64_t> {
    if (auto n = parse_unsigned(value, max)) return *n;
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: '{}' is not {} from 0 to {}", k, value, what, max));
  };
  if (k == "policy") {
    o.no_policy = value == "none";
    o.policy = o.no_policy ? std::nullopt : std::optional<std::string>(value);
  } else if (k == "partitions") {
    o.partitions = std::string(value);
  } else if (k == "control-socket") {
    o.control_socket = value == "none" ? std::string() : std::string(value);
  } else if (k == "control-socket-group") {
    o.control_socket_group = std::string(value);
  } else if (k == "max-records") {
    auto n = number(SIZE_MAX, "a number of records");
    if (!n) return n.error();
    o.max_records = static_cast<size_t>(*n);
  } else if (k == "answer-time-limit") {
    auto n = number(kMaxAnswerTimeLimitMs, "milliseconds");
    if (!n) return n.error();
    o.answer_time_limit = std::chrono::milliseconds(*n);
  } else if (k == "answer-threads") {
    auto n = number(kMaxAnswerThreads, "a number of threads");
    if (!n) return n.error();
    o.answer_threads = static_cast<size_t>(*n);
  } else if (k == "config") {
    read_config_file(std::string(value), into, depth);
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("unknown key '{}' ({})", key, kKeys));
  }
  return {};
}

}  // namespace

OptionsResult parse_options(std::string_view text) {
  OptionsResult out;
  std::string s(text);
  for (char& c : s) c = c == ',' ? ' ' : c;
  std::istringstream words(s);
  for (std::string word; words >> word;) {
    auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == word.size()) {
      out.errors.push_back(fmt::format("event_plugin_options: '{}' is not key=value", word));
      continue;
    }
    if (auto applied = apply(std::string_view(word).substr(0, eq),
                             std::string_view(word).substr(eq + 1), out, 0);
        !applied)
      out.errors.push_back("event_plugin_options: " + applied.error().message);
  }
  return out;
}

}  // namespace rdmaqos::osmp
