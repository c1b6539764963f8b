// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The number parser (see number.h).
#include "rdma-qos/common/number.h"

namespace rdmaqos {
namespace {

std::string_view trim(std::string_view text) {
  size_t b = text.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return text.substr(b, text.find_last_not_of(" \t") - b + 1);
}

std::optional<uint64_t> digits(std::string_view text, uint64_t base, uint64_t max) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    uint64_t digit;
    if (c >= '0' && c <= '9')
      digit = static_cast<uint64_t>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      digit = static_cast<uint64_t>(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F')
      digit = static_cast<uint64_t>(c - 'A' + 10);
    else
      return std::nullopt;
    // digit > max first: max - digit would wrap round and let "9" through a bound of 5.
    if (digit > max || value > (max - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

}  // namespace

std::optional<uint64_t> parse_unsigned(std::string_view text, uint64_t max) {
  text = trim(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    return digits(text.substr(2), 16, max);
  return digits(text, 10, max);
}

std::optional<uint64_t> parse_hex_digits(std::string_view text, uint64_t max) {
  return digits(trim(text), 16, max);
}

}  // namespace rdmaqos
