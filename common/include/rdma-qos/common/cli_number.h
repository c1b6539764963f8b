// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Numeric command-line options read like knobs and environment variables (common/number.h):
// decimal, or 0x-hex, a leading 0 decimal. CLI11 converts integers with strtoll's base 0, so on
// its own `--sa-key 010` is 8 and `--port 08` an error; every numeric option of our programs is
// declared through add_number(), whose transform rewrites the text to plain decimal first.
// Header-only: only programs that use CLI11 include it.
#pragma once

#include <CLI/CLI.hpp>

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rdma-qos/common/number.h"

namespace rdmaqos {

// The transform: the option's text as plain decimal, or an error naming what is accepted.
// Signed types take a leading '-'; bounds are the type's (add checks such as CLI::Range after).
template <std::integral T>
CLI::Validator number_text() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string_view digits = text;
        while (!digits.empty() && (digits.front() == ' ' || digits.front() == '\t'))
          digits.remove_prefix(1);
        bool negative = false;
        if constexpr (std::is_signed_v<T>) {
          if (!digits.empty() && digits.front() == '-') {
            negative = true;
            digits.remove_prefix(1);
          }
        }
        // The magnitude of the type's minimum, without overflowing int64_t's: -(min + 1) + 1.
        const uint64_t max = negative
                                 ? static_cast<uint64_t>(
                                       -(static_cast<int64_t>(std::numeric_limits<T>::min()) + 1)) +
                                       1
                                 : static_cast<uint64_t>(std::numeric_limits<T>::max());
        auto n = parse_unsigned(digits, max);
        if (!n)
          return "'" + text + "' is not a number (decimal or 0x-hex, at most " +
                 std::to_string(std::numeric_limits<T>::max()) + ")";
        text = (negative && *n != 0 ? "-" : "") + std::to_string(*n);
        return {};
      },
      "NUMBER");
}

template <std::integral T>
CLI::Option* add_number(CLI::App& app, std::string name, T& value, std::string help = {}) {
  return app.add_option(std::move(name), value, std::move(help))->transform(number_text<T>());
}

// The same for an optional number (unset when the option is absent).
template <std::integral T>
CLI::Option* add_number(CLI::App& app, std::string name, std::optional<T>& value,
                        std::string help = {}) {
  return app.add_option(std::move(name), value, std::move(help))->transform(number_text<T>());
}

// The same for a list of numbers (each value read alike, also those split at a delimiter).
template <std::integral T>
CLI::Option* add_number(CLI::App& app, std::string name, std::vector<T>& values,
                        std::string help = {}) {
  return app.add_option(std::move(name), values, std::move(help))->transform(number_text<T>());
}

}  // namespace rdmaqos
