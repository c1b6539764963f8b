// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The qos-ulps shorthand of OpenSM's policy syntax ("sdp : 1", "iser, port-num 3260 : 4", ...):
// each entry becomes a match rule with the ULP's Service-IDs, PKeys or port GUIDs and the SL.
#include <fmt/format.h>

#include <string>

#include "parser_parts.h"
#include "range_util.h"
#include "text_util.h"

namespace rdmaqos::policy {

void parse_qos_ulp(std::string_view rest, SourceLocation at, std::string_view line, ValueReader& in,
                   Policy& policy) {
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    in.error(at, "qos-ulps entry has no ': <sl>'", "write e.g. 'sdp : 1'");
    return;
  }
  std::string_view left = rest.substr(0, colon);
  int sl_col = at.column + static_cast<int>(colon) + 1;
  auto sl = in.single_number(rest.substr(colon + 1), at.line, sl_col, "SL", 0, 15);
  size_t comma = left.find(',');
  std::string ulp = lower(trim(left.substr(0, comma)));
  std::string keyword;
  std::string_view args;
  int args_col = at.column;
  if (comma != std::string_view::npos) {
    std::string_view after = left.substr(comma + 1);
    size_t b = 0;
    while (b < after.size() && is_blank(after[b])) ++b;
    size_t e = b;
    while (e < after.size() && is_word_char(after[e])) ++e;
    keyword = std::string(after.substr(b, e - b));
    args = after.substr(e);
    args_col = at.column + static_cast<int>(comma + 1 + e);
  }
  MatchRule r;
  r.location = at;
  r.end_line = at.line;
  r.text = trim(line);
  if (sl) r.ulp_sl = static_cast<uint8_t>(*sl);

  auto bad_keyword = [&](std::string_view allowed) {
    if (keyword.empty())
      in.error(at, fmt::format("'{}' needs one of: {}", ulp, allowed));
    else
      in.error(at, fmt::format("'{}, {}' is not a qos-ulps entry", ulp, keyword),
               fmt::format("after '{}' write one of: {}", ulp, allowed));
  };
  auto ports_to_sids = [&](uint64_t base) {
    RangeList ports;
    in.range_list(args, at.line, args_col, "port-num", 0xFFFF, ports);
    for (const auto& p : ports) r.service_ids.push_back({base + p.low, base + p.high});
  };

  if (ulp == "default") {
    if (!keyword.empty()) {
      in.error(at, "'default' takes no arguments");
      return;
    }
    if (policy.ulp_default_sl) {
      in.error(at, fmt::format("duplicate 'default' in 'qos-ulps' (first at line {})",
                               policy.ulp_default_location.line));
      return;
    }
    if (sl) {
      policy.ulp_default_sl = static_cast<uint8_t>(*sl);
      policy.ulp_default_location = at;
    }
    return;
  } else if (ulp == "sdp") {
    r.ulp = UlpKind::kSdp;
    if (keyword.empty())
      r.service_ids.push_back({0x10000, 0x1FFFF});
    else if (keyword == "port-num")
      ports_to_sids(0x10000);
    else
      return bad_keyword("port-num");
  } else if (ulp == "rds" || ulp == "iser") {
    r.ulp = ulp == "rds" ? UlpKind::kRds : UlpKind::kIser;
    if (keyword.empty())
      r.service_ids.push_back(ulp == "rds" ? Range{0x10648CA, 0x10648CA}
                                           : Range{0x1060CBC, 0x1060CBC});
    else if (keyword == "port-num")
      ports_to_sids(0x1060000);  // RDS and iSER share this base, as in OpenSM
    else
      return bad_keyword("port-num");
  } else if (ulp == "srp") {
    r.ulp = UlpKind::kSrp;
    if (keyword != "target-port-guid") return bad_keyword("target-port-guid");
    RangeList g;
    in.range_list(args, at.line, args_col, "target-port-guid", UINT64_MAX, g);
    r.destination_guids = merge_ranges(std::move(g));
  } else if (ulp == "ipoib") {
    r.ulp = UlpKind::kIpoib;
    r.ipoib_partition_check = true;
    if (keyword.empty())
      r.pkeys.push_back({0x7FFF, 0x7FFF});
    else if (keyword == "pkey")
      in.range_list(args, at.line, args_col, "pkey", 0xFFFF, r.pkeys, true);
    else
      return bad_keyword("pkey");
  } else if (ulp == "any") {
    r.ulp = UlpKind::kAny;
    if (keyword == "service-id") {
      in.range_list(args, at.line, args_col, "service-id", UINT64_MAX, r.service_ids);
    } else if (keyword == "pkey") {
      in.range_list(args, at.line, args_col, "pkey", 0xFFFF, r.pkeys, true);
    } else if (keyword == "target-port-guid" || keyword == "source-port-guid" ||
               keyword == "source-target-port-guid") {
      RangeList g;
      in.range_list(args, at.line, args_col, keyword, UINT64_MAX, g);
      g = merge_ranges(std::move(g));
      if (keyword != "source-port-guid") r.destination_guids = g;
      if (keyword != "target-port-guid") r.source_guids = g;
      if (keyword == "source-target-port-guid")
        in.warning(at,
                   "'any, source-target-port-guid' only matches paths with both ends in the set",
                   "OpenSM requires source AND target in the set (its manual says 'or')");
    } else {
      return bad_keyword(
          "service-id, pkey, target-port-guid, source-port-guid, source-target-port-guid");
    }
  } else {
    in.error(at, fmt::format("unknown qos-ulps entry '{}'", trim(left.substr(0, comma))),
             "entries are default, sdp, rds, iser, srp, ipoib and any");
    return;
  }
  r.service_ids = merge_ranges(std::move(r.service_ids));
  r.pkeys = merge_ranges(std::move(r.pkeys));
  if (r.ulp_sl) policy.ulp_rules.push_back(std::move(r));
}

}  // namespace rdmaqos::policy
