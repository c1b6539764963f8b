// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Parsing the plugin's plugstack.conf arguments into SiteRules, and the two questions asked of
// them (who may use a class, which class a job gets by default).
#include "rdma-qos/slurm/site_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdma-qos/common/number.h"
#include "rdma-qos/common/result.h"

namespace rdmaqos::slurm {
namespace {

constexpr size_t kMaxName = 64;
constexpr uint64_t kMaxClass = 0xFFF;  // QoS class is 12 bits in the PathRecord

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool valid_name(std::string_view s) {
  return !s.empty() && s.size() <= kMaxName && std::all_of(s.begin(), s.end(), name_char);
}

// Users, groups, accounts and partitions: what Slurm and the passwd database accept is wider
// than class names (e.g. '@' in some account names), but never blanks, ',' or '='.
bool valid_principal(std::string_view s) {
  return !s.empty() && s.size() <= 256 && s.find_first_of(" \t,=:") == std::string_view::npos;
}

std::optional<bool> parse_bool(std::string_view v) {
  if (v == "yes" || v == "true" || v == "1" || v == "on") return true;
  if (v == "no" || v == "false" || v == "0" || v == "off") return false;
  return std::nullopt;
}

// "NAME:REST" split at the first ':'.
bool split_colon(std::string_view v, std::string_view& left, std::string_view& right) {
  const size_t colon = v.find(':');
  if (colon == std::string_view::npos) return false;
  left = v.substr(0, colon);
  right = v.substr(colon + 1);
  return true;
}

// The principals of an allow rule, or what is wrong with the list.
Result<std::vector<Principal>> parse_who(std::string_view list) {
  std::vector<Principal> out;
  auto bad = [](std::string message) {
    return make_error(ErrorCode::kInvalidArgument, std::move(message));
  };
  if (list.empty()) return bad("no user=, group= or account= after the class");
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string_view item = list.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad(fmt::format("'{}' is not user=NAME, group=NAME or account=NAME", item));
    std::string_view kind = item.substr(0, eq), name = item.substr(eq + 1);
    Principal p;
    if (kind == "user")
      p.kind = PrincipalKind::kUser;
    else if (kind == "group")
      p.kind = PrincipalKind::kGroup;
    else if (kind == "account")
      p.kind = PrincipalKind::kAccount;
    else
      return bad(fmt::format("'{}': the kind is user, group or account, not '{}'", item, kind));
    if (!valid_principal(name)) return bad(fmt::format("'{}': no valid name after '='", item));
    p.name = std::string(name);
    out.push_back(std::move(p));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string default_preload_path() {
#ifdef RDMA_QOS_PRELOAD_INSTALLED
  return RDMA_QOS_PRELOAD_INSTALLED;
#else
  return "/usr/lib/x86_64-linux-gnu/rdma-qos/librdmaqos-preload.so";
#endif
}

std::string argument_origin(int argument, std::string_view text) {
  return fmt::format("plugstack.conf argument {} '{}'", argument, text);
}

std::optional<ClassSpec> parse_class_spec(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    auto n = parse_unsigned(text, kMaxClass);
    if (!n) return std::nullopt;
    return ClassSpec{std::string(text), static_cast<uint16_t>(*n)};
  }
  if (!valid_name(text)) return std::nullopt;
  return ClassSpec{std::string(text), std::nullopt};
}

ParsedRules parse_site_rules(const std::vector<std::string_view>& args) {
  ParsedRules out;
  SiteRules& r = out.rules;
  int position = 0;
  for (std::string_view arg : args) {
    ++position;
    auto fail = [&](std::string message) {
      out.errors.emplace_back(Severity::kError, SourceLocation{0, 0}, std::move(message), "",
                              argument_origin(position, arg));
    };
    const size_t eq = arg.find('=');
    if (eq == std::string_view::npos) {
      fail("not KEY=VALUE");
      continue;
    }
    std::string_view key = arg.substr(0, eq), value = arg.substr(eq + 1);
    auto class_or_fail = [&](std::string_view text) -> std::optional<ClassSpec> {
      auto c = parse_class_spec(text);
      if (!c)
        fail(
            fmt::format("'{}' is not a class (a number 0..4095 or a name of up to {} letters, "
                        "digits, '_', '-', '.')",
                        text, kMaxName));
      return c;
    };
    if (key == "default") {
      if (auto c = class_or_fail(value)) r.default_class = *c;
    } else if (key == "partition") {
      std::string_view part, cls;
      if (!split_colon(value, part, cls) || !valid_principal(part)) {
        fail("expected partition=PARTITION:CLASS");
        continue;
      }
      if (auto c = class_or_fail(cls)) r.partitions.push_back({std::string(part), *c, position});
    } else if (key == "allow") {
      std::string_view cls, who;
      if (!split_colon(value, cls, who)) {
        fail("expected allow=CLASS:user=NAME,group=NAME,account=NAME");
        continue;
      }
      auto c = class_or_fail(cls);
      if (!c) continue;
      auto principals = parse_who(who);
      if (!principals) {
        fail(principals.error().message);
        continue;
      }
      r.allow.push_back(AllowRule{*c, std::move(*principals), position, std::string(arg)});
    } else if (key == "class") {
      std::string_view name, number;
      auto n = split_colon(value, name, number) ? parse_unsigned(number, kMaxClass) : std::nullopt;
      if (!n || !valid_name(name) || parse_class_spec(name)->number) {
        fail("expected class=NAME:NUMBER (a name that is not a number, and 0..4095)");
        continue;
      }
      r.aliases.push_back({std::string(name), static_cast<uint16_t>(*n)});
    } else if (key == "policy" || key == "config" || key == "rdma-qos") {
      if (value.empty() || value.front() != '/') {
        fail("expected an absolute path");
        continue;
      }
      (key == "policy" ? r.policy_file : key == "config" ? r.config_file : r.rdma_qos) = value;
    } else if (key == "link") {
      if (value == "auto")
        r.link = LinkChoice::kAuto;
      else if (value == "roce")
        r.link = LinkChoice::kRoce;
      else if (value == "ib")
        r.link = LinkChoice::kIb;
      else
        fail("expected link=auto, link=roce or link=ib");
    } else if (key == "overwrite") {
      auto b = parse_bool(value);
      if (!b)
        fail("expected overwrite=yes or overwrite=no");
      else
        r.overwrite = *b;
    } else if (key == "preload") {
      if (auto b = parse_bool(value))
        r.preload = *b ? default_preload_path() : std::string();
      else if (!value.empty() && value.front() == '/')
        r.preload = value;
      else
        fail("expected preload=yes, preload=no or preload=/path/to/librdmaqos-preload.so");
    } else if (key == "timeout") {
      auto n = parse_unsigned(value, 60);
      if (!n || *n == 0) {
        fail("expected timeout=SECONDS, 1..60");
        continue;
      }
      r.timeout_seconds = static_cast<int>(*n);
    } else {
      fail(
          fmt::format("unknown key '{}' (default, partition, allow, class, policy, config, "
                      "rdma-qos, link, overwrite, preload, timeout)",
                      key));
    }
  }
  return out;
}

bool principal_matches(const Principal& p, const Identity& who) {
  switch (p.kind) {
    case PrincipalKind::kUser: return p.name == who.user;
    case PrincipalKind::kGroup:
      return std::find(who.groups.begin(), who.groups.end(), p.name) != who.groups.end();
    case PrincipalKind::kAccount: return !who.account.empty() && p.name == who.account;
  }
  return false;
}

const AllowRule* refusing_rule(const SiteRules& rules, uint16_t number, const Identity& who,
                               const ResolveClass& resolve) {
  const AllowRule* first = nullptr;
  for (const AllowRule& rule : rules.allow) {
    auto n = resolve(rule.cls);
    if (!n || *n != number) continue;
    for (const Principal& p : rule.who)
      if (principal_matches(p, who)) return nullptr;
    if (first == nullptr) first = &rule;
  }
  return first;
}

const ClassSpec* site_default(const SiteRules& rules, std::string_view partition) {
  for (const PartitionDefault& p : rules.partitions)
    if (p.partition == partition) return &p.cls;
  return rules.default_class ? &*rules.default_class : nullptr;
}

}  // namespace rdmaqos::slurm
