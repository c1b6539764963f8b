// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Class names: site aliases first, then the policy's levels (the way `rdma-qos run-env` would
// match a plain-verbs QP of that class: the class and the default P_Key, no Service-ID).
#include "rdma-qos/slurm/class_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/policy/compiled_policy.h"

namespace rdmaqos::slurm {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::string> no_environment(std::string_view) {
  return std::nullopt;
}

}  // namespace

ClassNames ClassNames::aliases_of(const SiteRules& rules) {
  ClassNames n;
  for (const ClassAlias& a : rules.aliases) {
    n.by_name_.emplace(lower(a.name), a.number);  // the first alias of a name wins
    n.names_.emplace(a.number, a.name);
  }
  return n;
}

ClassNames ClassNames::without_policy(const SiteRules& rules, rdmaqos::Error problem) {
  ClassNames n = aliases_of(rules);
  n.problem_ = std::move(problem);
  return n;
}

ClassNames ClassNames::from_policy_text(const SiteRules& rules, std::string_view text,
                                        std::string_view file) {
  auto compiled = policy::load_policy(text, nullptr);
  if (!compiled.policy) {
    std::string first = "errors";
    for (const auto& d : compiled.diagnostics)
      if (d.severity == rdmaqos::Severity::kError) {
        first = rdmaqos::format_diagnostic(d, std::string(file));
        break;
      }
    ClassNames n = without_policy(
        rules, make_error(ErrorCode::kMalformed, fmt::format("the policy {} has {}", file, first)));
    n.policy_file_ = std::string(file);
    return n;
  }
  ClassNames n = aliases_of(rules);
  n.policy_file_ = std::string(file);
  policy::PathQuery q;
  q.component_mask = policy::kCompPkey | policy::kCompQosClass;
  q.pkey = 0xFFFF;
  for (uint32_t c = 0; c <= 0xFFF; ++c) {
    q.qos_class = static_cast<uint16_t>(c);
    auto m = compiled.policy->match(q);
    // Only a rule reaches a level "by class"; the default level is every class's.
    if (!m.rule || m.level == nullptr) continue;
    if (n.by_name_.emplace(lower(m.level->name), static_cast<uint16_t>(c)).second)
      n.names_.emplace(static_cast<uint16_t>(c), m.level->name);
  }
  return n;
}

ClassNames ClassNames::load(const SiteRules& rules) {
  std::string file = rules.policy_file;
  if (file.empty()) {
    auto cfg = config::load_host_config(
        &no_environment,
        rules.config_file.empty() ? std::nullopt : std::optional<std::string>(rules.config_file));
    file = cfg.config.text("policy_file");
  }
  auto read = config::read_regular_file(file, config::kMaxPolicyFileBytes);
  if (!read) {
    ClassNames n = without_policy(
        rules, make_error(read.error().code, fmt::format("cannot read the policy {}: {}", file,
                                                         read.error().message)));
    n.policy_file_ = file;
    return n;
  }
  return from_policy_text(rules, *read, file);
}

std::optional<uint16_t> ClassNames::resolve(const ClassSpec& spec) const {
  if (spec.number) return spec.number;
  auto it = by_name_.find(lower(spec.text));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::string ClassNames::describe(uint16_t number) const {
  auto it = names_.find(number);
  if (it == names_.end()) return std::to_string(number);
  return fmt::format("{} ({})", number, it->second);
}

}  // namespace rdmaqos::slurm
