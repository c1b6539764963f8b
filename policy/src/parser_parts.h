// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How the policy parser's files meet: the block parser (parser.cpp) reads values and reports
// diagnostics through ValueReader, which the qos-ulps shorthand (qos_ulps.cpp) uses too; the
// checks over the whole policy (validate.cpp) run once parsing is done.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

class ValueReader {
 public:
  virtual void error(SourceLocation at, std::string msg, std::string hint = {}) = 0;
  virtual void warning(SourceLocation at, std::string msg, std::string hint = {}) = 0;
  // One number in min..max (OpenSM's number syntax), or nullopt after an error.
  virtual std::optional<uint64_t> single_number(std::string_view value, int line_no, int col0,
                                                std::string_view field, uint64_t min,
                                                uint64_t max) = 0;
  // Appends the ranges of a list value; values above `max` are errors.
  virtual void range_list(std::string_view value, int line_no, int col0, std::string_view field,
                          uint64_t max, RangeList& out, bool pkey_mask = false) = 0;

 protected:
  ~ValueReader() = default;
};

// One qos-ulps line after its leading blanks: its match rule goes into policy.ulp_rules, a
// 'default' entry into policy.ulp_default_sl.
void parse_qos_ulp(std::string_view rest, SourceLocation at, std::string_view line, ValueReader& in,
                   Policy& policy);

// The checks after parsing; `setup_refs` are the port-group names qos-setup refers to.
void validate_policy(ParseResult& result,
                     const std::vector<std::pair<std::string, SourceLocation>>& setup_refs);

}  // namespace rdmaqos::policy
