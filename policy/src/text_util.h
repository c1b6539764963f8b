// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Small text helpers the policy parser's files share (case, blanks, words).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace rdmaqos::policy {

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

inline bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_blank(s[b])) ++b;
  while (e > b && is_blank(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace rdmaqos::policy
