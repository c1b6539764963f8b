// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The site's rules for the Slurm plugin, as written in plugstack.conf after the plugin's path:
// which class a job gets by default (per partition), which classes are reserved to which users,
// groups or accounts, and how the job's environment is filled in. Parsed once per Slurm
// context; a rule that does not parse names its argument, and the plugin then stays out of
// the way (jobs run with stock behaviour).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"

namespace rdmaqos::slurm {

// A class as the site or a user writes it: a number (0..4095) or a name (a level of the policy,
// or a `class=NAME:N` alias).
struct ClassSpec {
  std::string text;
  std::optional<uint16_t> number;  // set when `text` is a number
};

// Who may use a reserved class.
enum class PrincipalKind { kUser, kGroup, kAccount };
struct Principal {
  PrincipalKind kind = PrincipalKind::kUser;
  std::string name;
};

// `allow=CLASS:user=NAME,group=NAME,account=NAME`: the class is reserved to the principals
// of every allow rule that names it.
struct AllowRule {
  ClassSpec cls;
  std::vector<Principal> who;
  int argument = 0;  // 1-based position among the plugin's plugstack.conf arguments
  std::string text;  // the argument as written, for messages
};

struct PartitionDefault {
  std::string partition;
  ClassSpec cls;
  int argument = 0;
};

struct ClassAlias {
  std::string name;
  uint16_t number = 0;
};

enum class LinkChoice { kAuto, kRoce, kIb };

struct SiteRules {
  std::optional<ClassSpec> default_class;      // default=CLASS
  std::vector<PartitionDefault> partitions;    // partition=NAME:CLASS
  std::vector<AllowRule> allow;                // allow=CLASS:WHO[,WHO...]
  std::vector<ClassAlias> aliases;             // class=NAME:N
  std::string policy_file;                     // policy=PATH (empty: the host's policy_file)
  std::string config_file;                     // config=PATH (rdma-qos.conf for run-env)
  std::string rdma_qos = "/usr/bin/rdma-qos";  // rdma-qos=PATH, the program run-env is
  LinkChoice link = LinkChoice::kAuto;         // link=auto|roce|ib
  bool overwrite = false;                      // overwrite=yes: replace users' own values
  std::string preload;                         // preload=yes|PATH (empty: no module)
  int timeout_seconds = 10;                    // timeout=S, bound on run-env
};

// An argument's origin in diagnostics: "plugstack.conf argument N 'TEXT'" (N 1-based).
std::string argument_origin(int argument, std::string_view text);

struct ParsedRules {
  SiteRules rules;
  // Every bad argument, not only the first: errors whose origin is argument_origin() and whose
  // location is {0, 0} (an argument has no lines).
  Diagnostics errors;
};

// `preload=yes` means this path.
std::string default_preload_path();

ParsedRules parse_site_rules(const std::vector<std::string_view>& args);

// A class as typed by a user (--rdma-qos=...): digits are a number, otherwise a name of
// letters, digits, '_', '-' and '.' up to 64 characters. nullopt: not a class at all.
std::optional<ClassSpec> parse_class_spec(std::string_view text);

// The job's submitter, as far as the context knows it.
struct Identity {
  std::string user;
  std::vector<std::string> groups;  // primary first
  std::string account;              // empty: not known here
};

// Turns a rule's ClassSpec into a number; nullopt: a name nobody defines (such a rule
// reserves nothing, and the plugin warns about it once).
using ResolveClass = std::function<std::optional<uint16_t>(const ClassSpec&)>;

// The allow rule that refuses class `number` to `who`: the first rule naming the class when
// none of the rules naming it lists `who`; nullptr when `who` may use it. A class no allow rule
// names is open to everyone.
const AllowRule* refusing_rule(const SiteRules& rules, uint16_t number, const Identity& who,
                               const ResolveClass& resolve);

// The site's default for a job in `partition`: the partition's rule, else default=.
const ClassSpec* site_default(const SiteRules& rules, std::string_view partition);

}  // namespace rdmaqos::slurm
