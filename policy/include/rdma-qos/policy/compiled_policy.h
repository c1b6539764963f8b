// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A policy resolved against a fabric and compiled for matching: immutable, shared between
// threads, and replaced as a whole on reload (PolicyStore).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

// PathRecord ComponentMask bits the matcher looks at (IBA 15.2.5.16).
inline constexpr uint64_t kCompServiceIdMsb = 1ULL << 0;
inline constexpr uint64_t kCompServiceIdLsb = 1ULL << 1;
inline constexpr uint64_t kCompPkey = 1ULL << 13;
inline constexpr uint64_t kCompQosClass = 1ULL << 14;

// What the SA knows about one PathRecord (or MultiPathRecord) query when it picks a level.
// A field counts only when its ComponentMask bit is set; Service-ID needs both bits.
struct PathQuery {
  uint64_t component_mask = 0;
  uint64_t service_id = 0;
  uint16_t qos_class = 0;
  uint16_t pkey = 0;
  // The traffic class, for `tclass` rules (an rdma-qos extension). Set it only when the query
  // carries one (PathRecord ComponentMask bit 10, MultiPathRecord bit 4; on RoCE the socket's
  // TOS / IPV6_TCLASS): unset, no tclass rule matches.
  std::optional<uint8_t> tclass;
  uint64_t source_guid = 0;  // the SA's endpoint ports (a switch: its port 0 GUID)
  NodeType source_type = NodeType::kCa;
  uint64_t destination_guid = 0;
  NodeType destination_type = NodeType::kCa;
};

// The level a query gets.
struct Level {
  std::string name;  // "SimpleQoSLevel_SL<n>" / "SimpleQoSLevel_DEFAULT" for qos-ulps
  uint8_t sl = 0;
  std::optional<uint8_t> mtu_limit, rate_limit, packet_life;
  RangeList pkeys;
  SourceLocation location;
  // Which LIDs of a destination's LMC range the level's paths may use (empty: any). OpenSM
  // parses the field and never uses it; the SA responder does (sa-responder's path_bits.h).
  RangeList path_bits;
};

// The criterion a rule failed on, in the order OpenSM checks them.
// TClass, not OpenSM's, comes last.
enum class Criterion {
  kNone,
  kSource,
  kDestination,
  kQosClass,
  kServiceId,
  kPkey,
  kTClass,
  kDisabled
};
std::string_view criterion_name(Criterion c);

struct MatchResult {
  const Level* level = nullptr;
  std::optional<size_t> rule;  // index into CompiledPolicy::rules(); nullopt: the default level
};

struct RuleVerdict {
  size_t rule = 0;
  Criterion failed = Criterion::kNone;  // kNone: the rule matched
};

struct Explanation {
  MatchResult result;
  std::vector<RuleVerdict> considered;  // rules tried before (and including) the match
};

struct CompileResult;

class CompiledPolicy {
 public:
  // Resolves `policy` against `fabric` (may be null: groups then hold only what needs no
  // fabric: GUIDs and node types) and builds the indexes. Fabric-dependent problems become
  // diagnostics; errors leave no policy.
  static CompileResult compile(Policy policy, const Fabric* fabric);

  // The level for a query: first matching rule in file order (qos-match-rules, then qos-ulps),
  // else the default. Cost does not depend on the number of rules in common policies (see
  // matcher.cpp for the index and its limits).
  MatchResult match(const PathQuery& query) const;
  // The same answer by a linear scan, with the first failed criterion of every earlier rule.
  Explanation explain(const PathQuery& query) const;

  const Policy& policy() const { return policy_; }
  // All rules in matching order: policy().rules then policy().ulp_rules.
  const std::vector<const MatchRule*>& rules() const { return rules_; }
  const Level& default_level() const { return levels_.at(default_level_); }
  const Level& rule_level(size_t rule) const;
  bool rule_disabled(size_t rule) const;

  ~CompiledPolicy();
  CompiledPolicy(const CompiledPolicy&) = delete;
  CompiledPolicy& operator=(const CompiledPolicy&) = delete;

  struct Index;  // matcher.cpp

 private:
  CompiledPolicy();
  Criterion first_failure(size_t rule, const PathQuery& q) const;

  Policy policy_;
  std::vector<const MatchRule*> rules_;
  std::vector<Level> levels_;
  size_t default_level_ = 0;
  std::unique_ptr<Index> index_;
};

struct CompileResult {
  std::shared_ptr<const CompiledPolicy> policy;  // null when there are errors
  Diagnostics diagnostics;
};

// parse_policy + compile; diagnostics of both, in file order.
CompileResult load_policy(std::string_view text, const Fabric* fabric);
// The same from a policy already parsed, for a caller that compiles one text against several
// fabrics and reads it once.
CompileResult load_policy(ParseResult parsed, const Fabric* fabric);

// The policy in force, replaced atomically: readers take a snapshot with current() and keep it
// as long as they need; a reload that fails leaves the previous policy in force.
class PolicyStore {
 public:
  std::shared_ptr<const CompiledPolicy> current() const { return current_.load(); }
  // Returns the diagnostics; the policy is swapped in only when there are no errors.
  Diagnostics reload(std::string_view text, const Fabric* fabric);

 private:
  std::atomic<std::shared_ptr<const CompiledPolicy>> current_;
};

}  // namespace rdmaqos::policy
