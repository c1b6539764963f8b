// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one number parser for configuration values, command lines and environment variables:
// decimal or 0x-hex, unsigned, bounded. Every component uses it, so "0x10" and " 16 " mean the
// same everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rdmaqos {

// A decimal or 0x-hex (either case) unsigned number no larger than `max`; blanks around it are
// ignored. nullopt for anything else (empty, a sign, other characters, too large). A leading
// 0 is decimal, not octal.
std::optional<uint64_t> parse_unsigned(std::string_view text, uint64_t max = UINT64_MAX);

// Hex digits alone, no 0x (as the kernel writes them in /proc tables), no larger than `max`;
// blanks around them are ignored. nullopt for anything else.
std::optional<uint64_t> parse_hex_digits(std::string_view text, uint64_t max = UINT64_MAX);

}  // namespace rdmaqos
