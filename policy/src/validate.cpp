// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The checks after parsing, over the whole policy: duplicate and undefined names, DEFAULT,
// levels and groups never used, and rules that can never match (shadowed by an earlier one).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "parser_parts.h"
#include "range_util.h"
#include "text_util.h"

namespace rdmaqos::policy {
namespace {

void error(ParseResult& result, SourceLocation at, std::string msg, std::string hint = {}) {
  result.diagnostics.push_back({Severity::kError, at, std::move(msg), std::move(hint)});
}
void warning(ParseResult& result, SourceLocation at, std::string msg, std::string hint = {}) {
  result.diagnostics.push_back({Severity::kWarning, at, std::move(msg), std::move(hint)});
}

// "did you mean 'X'?" for a defined name within two edits (case-insensitive), else "".
std::string did_you_mean(const std::string& wanted, const std::vector<std::string>& names) {
  std::string w = lower(wanted);
  for (const auto& n : names) {
    std::string c = lower(n);
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= w.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (w[i - 1] != c[j - 1])});
      std::swap(prev, cur);
    }
    if (prev[c.size()] <= 2) return fmt::format("did you mean '{}'?", n);
  }
  return {};
}

bool names_subset(const std::vector<std::string>& inner, const std::vector<std::string>& outer) {
  return std::all_of(inner.begin(), inner.end(), [&](const std::string& n) {
    return std::any_of(outer.begin(), outer.end(),
                       [&](const std::string& o) { return iequals(n, o); });
  });
}

// True when every query rule `b` matches is matched by rule `a` (a names no criterion that b
// does not name, and each of a's sets contains b's).
bool covers(const MatchRule& a, const MatchRule& b) {
  auto rl = [](const RangeList& ra, const RangeList& rb) {
    return ra.empty() || (!rb.empty() && ranges_cover(ra, rb));
  };
  auto gl = [](const std::vector<std::string>& ga, const std::vector<std::string>& gb) {
    return ga.empty() || (!gb.empty() && names_subset(gb, ga));
  };
  auto og = [](const std::optional<RangeList>& ga, const std::optional<RangeList>& gb) {
    return !ga || (gb && ranges_cover(*ga, *gb));
  };
  // Group names and inline GUID sets are not compared with each other.
  if ((!a.sources.empty() && b.source_guids) || (a.source_guids && !b.sources.empty()))
    return false;
  if ((!a.destinations.empty() && b.destination_guids) ||
      (a.destination_guids && !b.destinations.empty()))
    return false;
  return rl(a.qos_classes, b.qos_classes) && rl(a.service_ids, b.service_ids) &&
         rl(a.pkeys, b.pkeys) && rl(a.tclasses, b.tclasses) && gl(a.sources, b.sources) &&
         gl(a.destinations, b.destinations) && og(a.source_guids, b.source_guids) &&
         og(a.destination_guids, b.destination_guids);
}

// Pairwise checks are quadratic: only catch-all rules are checked in very large policies.
constexpr size_t kPairwiseShadowLimit = 4000;

void shadowed_rules(ParseResult& result) {
  const Policy& p = result.policy;
  std::vector<const MatchRule*> all;
  for (const auto& r : p.rules) all.push_back(&r);
  for (const auto& r : p.ulp_rules) all.push_back(&r);
  const bool pairwise = all.size() <= kPairwiseShadowLimit;
  const MatchRule* catch_all = nullptr;
  for (size_t j = 0; j < all.size(); ++j) {
    const MatchRule* by = catch_all;
    if (!by && pairwise)
      for (size_t i = 0; i < j && !by; ++i)
        if (covers(*all[i], *all[j])) by = all[i];
    if (by)
      warning(
          result, all[j]->location,
          fmt::format("rule can never match: the rule at line {} matches every query it "
                      "matches",
                      by->location.line),
          by->names_no_criterion() ? "a rule without criteria matches every query" : std::string());
    if (!catch_all && all[j]->names_no_criterion()) catch_all = all[j];
  }
}

}  // namespace

void validate_policy(ParseResult& result,
                     const std::vector<std::pair<std::string, SourceLocation>>& setup_refs) {
  Policy& p = result.policy;
  for (size_t i = 0; i < p.port_groups.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (iequals(p.port_groups[i].name, p.port_groups[j].name)) {
        error(result, p.port_groups[i].location,
              fmt::format("duplicate port-group name '{}' (first defined at line {})",
                          p.port_groups[i].name, p.port_groups[j].location.line));
        break;
      }
  for (size_t i = 0; i < p.levels.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (iequals(p.levels[i].name, p.levels[j].name)) {
        error(result, p.levels[i].location,
              fmt::format("duplicate qos-level name '{}' (first defined at line {})",
                          p.levels[i].name, p.levels[j].location.line));
        break;
      }
  if (!p.default_level() && !p.ulp_default_sl)
    error(result, {1, 1}, "no DEFAULT qos-level",
          "add a qos-level with 'name: DEFAULT' or a qos-ulps line 'default : <sl>'");

  std::vector<bool> level_used(p.levels.size()), group_used(p.port_groups.size());
  for (size_t g = 0; g < p.port_groups.size(); ++g)  // duplicates already have their error
    for (size_t h = 0; h < g; ++h)
      if (iequals(p.port_groups[g].name, p.port_groups[h].name)) group_used[g] = true;
  for (size_t l = 0; l < p.levels.size(); ++l)
    for (size_t h = 0; h < l; ++h)
      if (iequals(p.levels[l].name, p.levels[h].name)) level_used[l] = true;
  auto use_group = [&](const std::string& name, SourceLocation at, std::string_view role) {
    for (size_t g = 0; g < p.port_groups.size(); ++g)
      if (iequals(p.port_groups[g].name, name)) {
        group_used[g] = true;
        return;
      }
    std::vector<std::string> names;
    for (const auto& g : p.port_groups) names.push_back(g.name);
    error(result, at, fmt::format("{} port-group '{}' is not defined", role, name),
          did_you_mean(name, names));
  };
  for (const auto& r : p.rules) {
    bool found = false;
    for (size_t l = 0; l < p.levels.size(); ++l)
      if (iequals(p.levels[l].name, r.level_name)) {
        level_used[l] = true;
        found = true;
        break;
      }
    if (!found) {
      std::vector<std::string> names;
      for (const auto& l : p.levels) names.push_back(l.name);
      error(result, r.level_location, fmt::format("qos-level '{}' is not defined", r.level_name),
            did_you_mean(r.level_name, names));
    }
    for (size_t s = 0; s < r.sources.size(); ++s)
      use_group(r.sources[s], r.source_locations[s], "source");
    for (size_t d = 0; d < r.destinations.size(); ++d)
      use_group(r.destinations[d], r.destination_locations[d], "destination");
  }
  for (const auto& [name, at] : setup_refs) use_group(name, at, "qos-setup");
  for (size_t l = 0; l < p.levels.size(); ++l)
    if (!level_used[l] && !iequals(p.levels[l].name, "DEFAULT"))
      warning(result, p.levels[l].location,
              fmt::format("qos-level '{}' is never used", p.levels[l].name));
  for (size_t g = 0; g < p.port_groups.size(); ++g)
    if (!group_used[g])
      warning(result, p.port_groups[g].location,
              fmt::format("port-group '{}' is never used", p.port_groups[g].name));
  shadowed_rules(result);
}

}  // namespace rdmaqos::policy
