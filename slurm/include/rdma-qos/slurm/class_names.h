// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a class written as a name means: a `class=NAME:N` alias of the site, else the level of
// that name in the QoS policy, reached by the smallest class a qos-class rule sends there.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "rdma-qos/common/result.h"
#include "rdma-qos/slurm/site_rules.h"

namespace rdmaqos::slurm {

class ClassNames {
 public:
  // Reads the policy text (`file` names it in messages). A policy with errors leaves only the
  // aliases and sets problem() (kMalformed, naming the first error with its position).
  static ClassNames from_policy_text(const SiteRules& rules, std::string_view text,
                                     std::string_view file);
  // Reads the policy file: rules.policy_file, else the policy_file knob of rules.config_file
  // (the default rdma-qos.conf when empty). The environment is not consulted: in srun it is the
  // user's, in slurmstepd the daemon's. A file that cannot be read sets problem() with the
  // read's code (kNotFound for a missing file).
  static ClassNames load(const SiteRules& rules);
  // Aliases only, with the reason the policy is not there.
  static ClassNames without_policy(const SiteRules& rules, rdmaqos::Error problem);

  // The class a spec means; nullopt: a name nobody defines.
  std::optional<uint16_t> resolve(const ClassSpec& spec) const;
  // "3 (storage)" or "3": for messages and logs.
  std::string describe(uint16_t number) const;

  // Nullopt when the policy was read; otherwise why names of levels cannot be resolved.
  const std::optional<rdmaqos::Error>& problem() const { return problem_; }
  const std::string& policy_file() const { return policy_file_; }

 private:
  static ClassNames aliases_of(const SiteRules& rules);

  std::map<std::string, uint16_t, std::less<>> by_name_;  // lower-case name -> class
  std::map<uint16_t, std::string> names_;                 // class -> the name it was reached by
  std::optional<rdmaqos::Error> problem_;
  std::string policy_file_;
};

}  // namespace rdmaqos::slurm
