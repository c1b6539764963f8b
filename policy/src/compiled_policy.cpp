// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Resolution of a parsed policy against a fabric, and the rule index that makes matching cost
// independent of the number of rules.
//
// Why this index: OpenSM scans every rule for every query, so its cost grows with the policy.
// A query must get the lowest-numbered rule whose every named criterion holds. Each rule is
// filed under exactly one of its criteria, its "key", chosen at compile time as the criterion
// under which the fewest other rules share its values. A rule can only match a query that
// satisfies its key, so the candidates of a query are the rules filed under the query's
// Service-ID, QoS class and PKey (elementary-interval tables: one binary search each) and under
// the port groups of its source and destination (hash and interval lookups of the GUID, then a
// per-group rule list). Candidates lists are sorted; each is walked only below the best rule
// found so far, and a candidate is confirmed by checking its remaining criteria. The cost is
// therefore O(log R + candidates), and candidates stay few unless many rules share every one of
// their criteria values (then no single criterion can tell them apart; the index degrades
// towards OpenSM's scan for those rules only). Bitset intersection was rejected: it costs
// O(R/64) per query, which is 1.5k words at 100k rules.
#include "rdma-qos/policy/compiled_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>

#include "range_util.h"

namespace rdmaqos::policy {

std::string_view criterion_name(Criterion c) {
  switch (c) {
    case Criterion::kNone: return "none";
    case Criterion::kSource: return "source";
    case Criterion::kDestination: return "destination";
    case Criterion::kQosClass: return "qos-class";
    case Criterion::kServiceId: return "service-id";
    case Criterion::kPkey: return "pkey";
    case Criterion::kTClass: return "tclass";
    case Criterion::kDisabled: return "disabled";
  }
  return "?";
}

namespace {

constexpr uint32_t kNoRule = UINT32_MAX;

struct ResolvedGroup {
  uint8_t node_types = 0;
  RangeList ranges;             // port-guid ranges, kept as ranges
  std::vector<uint64_t> guids;  // sorted: port names, pkeys, partitions, SELF

  bool contains(uint64_t guid, NodeType type) const {
    return (node_types & node_type_bit(type)) || ranges_contain(ranges, guid) ||
           std::binary_search(guids.begin(), guids.end(), guid);
  }
};

// Elementary intervals of the union of many range lists, each with the sorted ids of the lists
// covering it (compressed rows).
class IntervalIndex {
 public:
  void build(const std::vector<std::pair<uint32_t, const RangeList*>>& entries) {
    starts_ = {0};
    for (const auto& [id, rl] : entries)
      for (const auto& r : *rl) {
        starts_.push_back(r.low);
        if (r.high != UINT64_MAX) starts_.push_back(r.high + 1);
      }
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
    starts_.shrink_to_fit();
    offsets_.assign(starts_.size() + 1, 0);
    for_each_span(entries, [&](uint32_t, size_t i) { ++offsets_[i + 1]; });
    for (size_t i = 1; i < offsets_.size(); ++i) offsets_[i] += offsets_[i - 1];
    ids_.assign(offsets_.back(), 0);
    std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for_each_span(entries, [&](uint32_t id, size_t i) { ids_[fill[i]++] = id; });
  }

  std::span<const uint32_t> lookup(uint64_t v) const {
    if (starts_.empty()) return {};
    size_t i =
        static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), v) - starts_.begin()) -
        1;
    return {ids_.data() + offsets_[i], ids_.data() + offsets_[i + 1]};
  }

  // The largest number of lists sharing any value of `rl`.
  size_t max_overlap(const RangeList& rl) const {
    size_t worst = 0;
    for (const auto& r : rl) {
      auto [i0, i1] = span_of(r);
      for (size_t i = i0; i <= i1; ++i)
        worst = std::max<size_t>(worst, offsets_[i + 1] - offsets_[i]);
    }
    return worst;
  }

  size_t memory() const {
    return starts_.capacity() * 8 + offsets_.capacity() * 4 + ids_.capacity() * 4;
  }

 private:
  std::pair<size_t, size_t> span_of(const Range& r) const {
    size_t i0 = static_cast<size_t>(std::lower_bound(starts_.begin(), starts_.end(), r.low) -
                                    starts_.begin());
    size_t i1 = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), r.high) -
                                    starts_.begin()) -
                1;
    return {i0, i1};
  }

  template <typename F>
  void for_each_span(const std::vector<std::pair<uint32_t, const RangeList*>>& entries, F f) {
    for (const auto& [id, rl] : entries)
      for (const auto& r : *rl) {
        auto [i0, i1] = span_of(r);
        for (size_t i = i0; i <= i1; ++i) f(id, i);
      }
  }

  std::vector<uint64_t> starts_;
  std::vector<uint32_t> offsets_;
  std::vector<uint32_t> ids_;
};

enum Dim {
  kDimSource,
  kDimDestination,
  kDimQosClass,
  kDimServiceId,
  kDimPkey,
  kDimTClass,
  kDimCount
};

// The group ids of one side of a rule: nearly always one or two, kept inline; a vector per rule
// side would cost a heap block each (about 60 of the bytes a rule took at 100k rules).
class GroupIds {
 public:
  void push_back(uint32_t g) {
    if (!spill_ && size_ < inline_.size()) {
      inline_[size_++] = g;
      return;
    }
    if (!spill_) spill_ = std::make_unique<std::vector<uint32_t>>(begin(), end());
    spill_->push_back(g);
  }
  const uint32_t* begin() const { return spill_ ? spill_->data() : inline_.data(); }
  const uint32_t* end() const { return begin() + size(); }
  size_t size() const { return spill_ ? spill_->size() : size_; }

 private:
  std::array<uint32_t, 2> inline_{};
  uint32_t size_ = 0;
  std::unique_ptr<std::vector<uint32_t>> spill_;
};

}  // namespace

struct CompiledPolicy::Index {
  std::vector<ResolvedGroup> groups;
  struct Rule {
    GroupIds sources, destinations;
    bool has_source = false, has_destination = false;
    const RangeList* qos_classes = nullptr;
    const RangeList* service_ids = nullptr;
    const RangeList* pkeys = nullptr;
    const RangeList* tclasses = nullptr;
    uint32_t level = 0;
    bool disabled = false;
  };
  std::vector<Rule> rules;
  uint32_t catch_all = kNoRule;  // the first rule without criteria

  // Group membership of a GUID.
  IntervalIndex group_ranges;
  std::unordered_map<uint64_t, std::vector<uint32_t>> group_guids;
  std::vector<uint32_t> groups_by_type[3];  // CA, switch, router

  // Rules filed under their key criterion.
  IntervalIndex keyed[kDimCount];                      // qos-class, service-id, pkey, tclass
  std::vector<std::vector<uint32_t>> keyed_groups[2];  // [source|destination][group]

  template <typename F>
  void for_each_group(uint64_t guid, NodeType type, F f) const {
    for (uint32_t g : groups_by_type[static_cast<int>(type) - 1]) f(g);
    for (uint32_t g : group_ranges.lookup(guid)) f(g);
    auto it = group_guids.find(guid);
    if (it != group_guids.end())
      for (uint32_t g : it->second) f(g);
  }
};

CompiledPolicy::CompiledPolicy() = default;
CompiledPolicy::~CompiledPolicy() = default;

const Level& CompiledPolicy::rule_level(size_t rule) const {
  return levels_.at(index_->rules.at(rule).level);
}

bool CompiledPolicy::rule_disabled(size_t rule) const {
  return index_->rules.at(rule).disabled;
}

Criterion CompiledPolicy::first_failure(size_t rule, const PathQuery& q) const {
  const Index::Rule& r = index_->rules[rule];
  if (r.disabled) return Criterion::kDisabled;
  auto in_any = [&](const GroupIds& gs, uint64_t guid, NodeType type) {
    return std::any_of(gs.begin(), gs.end(),
                       [&](uint32_t g) { return index_->groups[g].contains(guid, type); });
  };
  if (r.has_source && !in_any(r.sources, q.source_guid, q.source_type)) return Criterion::kSource;
  if (r.has_destination && !in_any(r.destinations, q.destination_guid, q.destination_type))
    return Criterion::kDestination;
  if (!r.qos_classes->empty() &&
      (!(q.component_mask & kCompQosClass) || !ranges_contain(*r.qos_classes, q.qos_class)))
    return Criterion::kQosClass;
  constexpr uint64_t kSid = kCompServiceIdMsb | kCompServiceIdLsb;
  if (!r.service_ids->empty() &&
      ((q.component_mask & kSid) != kSid || !ranges_contain(*r.service_ids, q.service_id)))
    return Criterion::kServiceId;
  if (!r.pkeys->empty() &&
      (!(q.component_mask & kCompPkey) || !ranges_contain(*r.pkeys, q.pkey & 0x7FFFu)))
    return Criterion::kPkey;
  if (!r.tclasses->empty() && (!q.tclass || !ranges_contain(*r.tclasses, *q.tclass)))
    return Criterion::kTClass;
  return Criterion::kNone;
}

MatchResult CompiledPolicy::match(const PathQuery& q) const {
  const Index& ix = *index_;
  uint32_t best = ix.catch_all;
  auto walk = [&](std::span<const uint32_t> candidates) {
    for (uint32_t r : candidates) {
      if (r >= best) break;
      if (first_failure(r, q) == Criterion::kNone) {
        best = r;
        break;
      }
    }
  };
  constexpr uint64_t kSid = kCompServiceIdMsb | kCompServiceIdLsb;
  if ((q.component_mask & kSid) == kSid) walk(ix.keyed[kDimServiceId].lookup(q.service_id));
  if (q.component_mask & kCompQosClass) walk(ix.keyed[kDimQosClass].lookup(q.qos_class));
  if (q.component_mask & kCompPkey) walk(ix.keyed[kDimPkey].lookup(q.pkey & 0x7FFFu));
  if (q.tclass) walk(ix.keyed[kDimTClass].lookup(*q.tclass));
  ix.for_each_group(q.source_guid, q.source_type, [&](uint32_t g) { walk(ix.keyed_groups[0][g]); });
  ix.for_each_group(q.destination_guid, q.destination_type,
                    [&](uint32_t g) { walk(ix.keyed_groups[1][g]); });
  if (best == kNoRule) return {&default_level(), std::nullopt};
  return {&levels_[ix.rules[best].level], best};
}

Explanation CompiledPolicy::explain(const PathQuery& q) const {
  Explanation e;
  e.result = {&default_level(), std::nullopt};
  for (size_t r = 0; r < rules_.size(); ++r) {
    Criterion c = first_failure(r, q);
    e.considered.push_back({r, c});
    if (c == Criterion::kNone) {
      e.result = {&levels_[index_->rules[r].level], r};
      break;
    }
  }
  return e;
}

namespace {

// Resolves the fabric-dependent selectors of a group, with their diagnostics.
class Resolver {
 public:
  Resolver(const Fabric* fabric, Diagnostics& diags) : fabric_(fabric), diags_(diags) {
    if (!fabric_) return;
    for (const auto& n : fabric_->nodes) by_description_[n.description].push_back(&n);
  }

  ResolvedGroup resolve(const PortGroup& g) {
    ResolvedGroup out;
    out.node_types = g.node_types;
    out.ranges = g.port_guids;
    if (!fabric_) return out;
    for (const auto& pn : g.port_names) port_name(pn, out.guids);
    for (const auto& r : g.pkeys)
      for (const auto& p : fabric_->partitions)
        if (p.pkey >= r.low && p.pkey <= r.high)
          for (const auto& m : p.members) out.guids.push_back(m.port_guid);
    for (const auto& name : g.partitions) {
      const Partition* p = fabric_->partition(name);
      if (!p) {
        warn(g.location,
             fmt::format("port-group '{}': partition '{}' does not exist", g.name, name));
        continue;
      }
      for (const auto& m : p->members) out.guids.push_back(m.port_guid);
    }
    if (g.self && fabric_->sm_port_guid) out.guids.push_back(fabric_->sm_port_guid);
    std::sort(out.guids.begin(), out.guids.end());
    out.guids.erase(std::unique(out.guids.begin(), out.guids.end()), out.guids.end());
    if (!out.node_types && out.guids.empty() && !any_fabric_port_in(out.ranges))
      warn(g.location, fmt::format("port-group '{}' selects no port in this fabric", g.name));
    return out;
  }

  bool any_fabric_port_in(const RangeList& ranges) const {
    for (const auto& n : fabric_->nodes)
      for (const auto& pg : n.port_guids)
        if (ranges_contain(ranges, pg.second)) return true;
    return false;
  }

 private:
  void warn(SourceLocation at, std::string msg, std::string hint = {}) {
    diags_.push_back({Severity::kWarning, at, std::move(msg), std::move(hint)});
  }

  void port_name(const PortName& pn, std::vector<uint64_t>& guids) {
    auto it = by_description_.find(pn.node_description);
    std::string text = fmt::format("{}/P{}", pn.node_description, pn.port);
    if (it == by_description_.end()) {
      warn(pn.location, fmt::format("port-name '{}' selects nothing: no node '{}' in the fabric",
                                    text, pn.node_description));
      return;
    }
    if (it->second.size() > 1)
      warn(pn.location,
           fmt::format("node description '{}' is shared by {} nodes: port-name '{}' selects all "
                       "of them",
                       pn.node_description, it->second.size(), text),
           "OpenSM selects only the node with the lowest GUID");
    for (const FabricNode* n : it->second) {
      if (pn.port > n->num_ports) {
        diags_.push_back({Severity::kError, pn.location,
                          fmt::format("port-name '{}': node '{}' has no port {} (it has {})", text,
                                      pn.node_description, pn.port, n->num_ports),
                          ""});
        continue;
      }
      if (n->type == NodeType::kSwitch) {  // every external port is the switch endpoint
        guids.push_back(n->node_guid);
        continue;
      }
      for (const auto& [port, guid] : n->port_guids)
        if (port == pn.port) guids.push_back(guid);
    }
  }

  const Fabric* fabric_;
  Diagnostics& diags_;
  std::map<std::string, std::vector<const FabricNode*>, std::less<>> by_description_;
};

}  // namespace

CompileResult CompiledPolicy::compile(Policy policy, const Fabric* fabric) {
  CompileResult out;
  std::shared_ptr<CompiledPolicy> cp(new CompiledPolicy());
  cp->policy_ = std::move(policy);
  cp->index_ = std::make_unique<Index>();
  const Policy& p = cp->policy_;
  Index& ix = *cp->index_;

  // Levels: the full ones, then OpenSM's simple levels for qos-ulps.
  for (const auto& l : p.levels)
    cp->levels_.push_back(
        {l.name, l.sl, l.mtu_limit, l.rate_limit, l.packet_life, l.pkeys, l.location, l.path_bits});
  const size_t simple_base = cp->levels_.size();
  for (uint8_t sl = 0; sl < 16; ++sl)
    cp->levels_.push_back({fmt::format("SimpleQoSLevel_SL{}", sl), sl, {}, {}, {}, {}, {}, {}});
  auto level_index = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t i = 0; i < p.levels.size(); ++i)
      if (iequals(p.levels[i].name, name)) return i;
    return std::nullopt;
  };
  if (auto d = level_index("DEFAULT")) {
    cp->default_level_ = *d;
  } else if (p.ulp_default_sl) {
    cp->levels_.push_back({"SimpleQoSLevel_DEFAULT", *p.ulp_default_sl, {}, {}, {}, {}, {}, {}});
    cp->default_level_ = cp->levels_.size() - 1;
  } else {
    out.diagnostics.push_back({Severity::kError, {1, 1}, "no DEFAULT qos-level", ""});
    return out;
  }

  Resolver resolver(fabric, out.diagnostics);
  for (const auto& g : p.port_groups) ix.groups.push_back(resolver.resolve(g));
  auto group_index = [&](std::string_view name) -> std::optional<uint32_t> {
    for (size_t i = 0; i < p.port_groups.size(); ++i)
      if (iequals(p.port_groups[i].name, name)) return static_cast<uint32_t>(i);
    return std::nullopt;
  };
  auto inline_group = [&](const RangeList& guids) {
    ResolvedGroup g;
    g.ranges = guids;
    ix.groups.push_back(std::move(g));
    return static_cast<uint32_t>(ix.groups.size() - 1);
  };

  cp->rules_.reserve(p.rules.size() + p.ulp_rules.size());
  for (const auto& r : p.rules) cp->rules_.push_back(&r);
  for (const auto& r : p.ulp_rules) cp->rules_.push_back(&r);
  ix.rules.reserve(cp->rules_.size());
  for (const MatchRule* m : cp->rules_) {
    Index::Rule r;
    r.qos_classes = &m->qos_classes;
    r.service_ids = &m->service_ids;
    r.pkeys = &m->pkeys;
    r.tclasses = &m->tclasses;
    for (const auto& name : m->sources) {
      auto g = group_index(name);
      if (!g) {
        out.diagnostics.push_back({Severity::kError, m->location,
                                   fmt::format("source port-group '{}' is not defined", name), ""});
        continue;
      }
      r.sources.push_back(*g);
    }
    for (const auto& name : m->destinations) {
      auto g = group_index(name);
      if (!g) {
        out.diagnostics.push_back({Severity::kError, m->location,
                                   fmt::format("destination port-group '{}' is not defined", name),
                                   ""});
        continue;
      }
      r.destinations.push_back(*g);
    }
    if (m->source_guids) r.sources.push_back(inline_group(*m->source_guids));
    if (m->destination_guids) r.destinations.push_back(inline_group(*m->destination_guids));
    r.has_source = !m->sources.empty() || m->source_guids.has_value();
    r.has_destination = !m->destinations.empty() || m->destination_guids.has_value();
    if (m->ulp_sl) {
      r.level = static_cast<uint32_t>(simple_base + *m->ulp_sl);
    } else if (auto l = level_index(m->level_name)) {
      r.level = static_cast<uint32_t>(*l);
    } else {
      out.diagnostics.push_back({Severity::kError, m->level_location,
                                 fmt::format("qos-level '{}' is not defined", m->level_name), ""});
    }
    if (fabric && m->ipoib_partition_check) {
      for (const auto& range : m->pkeys) {
        uint16_t pkey = static_cast<uint16_t>(range.low);
        const Partition* part = fabric->partition(pkey);
        std::string why = !part                      ? "does not exist"
                          : part->full_members() < 2 ? "has fewer than two full members"
                                                     : "";
        if (!why.empty()) {
          out.diagnostics.push_back(
              {Severity::kWarning, m->location,
               fmt::format("IPoIB partition 0x{:04x} {}: this rule never matches", pkey, why),
               "OpenSM rejects the whole policy file in this case"});
          r.disabled = true;
        }
      }
    }
    if (fabric && m->ulp == UlpKind::kNone && !m->pkeys.empty()) {
      size_t missing = 0;
      uint64_t first = 0;
      for (const auto& range : m->pkeys)
        for (uint64_t k = range.low; k <= range.high; ++k)
          if (!fabric->partition(static_cast<uint16_t>(k)) && missing++ == 0) first = k;
      if (missing)
        out.diagnostics.push_back(
            {Severity::kWarning, m->location,
             fmt::format("{} pkey value(s) of this rule name no partition (first: 0x{:04x})",
                         missing, first),
             ""});
    }
    if (m->names_no_criterion() && ix.catch_all == kNoRule && !r.disabled)
      ix.catch_all = static_cast<uint32_t>(ix.rules.size());
    ix.rules.push_back(std::move(r));
  }
  if (has_errors(out.diagnostics)) return out;

  // GUID -> groups.
  std::vector<std::pair<uint32_t, const RangeList*>> range_entries;
  for (uint32_t g = 0; g < ix.groups.size(); ++g) {
    const ResolvedGroup& rg = ix.groups[g];
    for (int t = 0; t < 3; ++t)
      if (rg.node_types & (1u << t)) ix.groups_by_type[t].push_back(g);
    if (!rg.ranges.empty()) range_entries.push_back({g, &rg.ranges});
    for (uint64_t guid : rg.guids) ix.group_guids[guid].push_back(g);
  }
  ix.group_ranges.build(range_entries);

  // Choose each rule's key: the criterion whose values the fewest rules share.
  const uint32_t n = static_cast<uint32_t>(ix.rules.size());
  std::vector<std::pair<uint32_t, const RangeList*>> by_dim[kDimCount];
  std::vector<size_t> group_use[2];
  group_use[0].assign(ix.groups.size(), 0);
  group_use[1].assign(ix.groups.size(), 0);
  for (uint32_t i = 0; i < n; ++i) {
    const Index::Rule& r = ix.rules[i];
    if (r.disabled) continue;
    if (!r.qos_classes->empty()) by_dim[kDimQosClass].push_back({i, r.qos_classes});
    if (!r.service_ids->empty()) by_dim[kDimServiceId].push_back({i, r.service_ids});
    if (!r.pkeys->empty()) by_dim[kDimPkey].push_back({i, r.pkeys});
    if (!r.tclasses->empty()) by_dim[kDimTClass].push_back({i, r.tclasses});
    for (uint32_t g : r.sources) ++group_use[0][g];
    for (uint32_t g : r.destinations) ++group_use[1][g];
  }
  IntervalIndex all[kDimCount];
  for (int d : {kDimQosClass, kDimServiceId, kDimPkey, kDimTClass}) all[d].build(by_dim[d]);

  std::vector<std::pair<uint32_t, const RangeList*>> keyed_entries[kDimCount];
  ix.keyed_groups[0].assign(ix.groups.size(), {});
  ix.keyed_groups[1].assign(ix.groups.size(), {});
  for (uint32_t i = 0; i < n; ++i) {
    const Index::Rule& r = ix.rules[i];
    if (r.disabled || i == ix.catch_all) continue;
    int key = -1;
    size_t best = SIZE_MAX;
    auto group_cost = [&](const GroupIds& gs, int role) {
      size_t c = 0;
      for (uint32_t g : gs) c += group_use[role][g] + (ix.groups[g].node_types ? n : 0);
      return c;
    };
    auto consider = [&](int dim, size_t cost) {
      if (cost < best) {
        best = cost;
        key = dim;
      }
    };
    if (r.has_source) consider(kDimSource, group_cost(r.sources, 0));
    if (r.has_destination) consider(kDimDestination, group_cost(r.destinations, 1));
    if (!r.service_ids->empty())
      consider(kDimServiceId, all[kDimServiceId].max_overlap(*r.service_ids));
    if (!r.qos_classes->empty())
      consider(kDimQosClass, all[kDimQosClass].max_overlap(*r.qos_classes));
    if (!r.pkeys->empty()) consider(kDimPkey, all[kDimPkey].max_overlap(*r.pkeys));
    if (!r.tclasses->empty()) consider(kDimTClass, all[kDimTClass].max_overlap(*r.tclasses));
    switch (key) {
      case kDimSource:
        for (uint32_t g : r.sources) ix.keyed_groups[0][g].push_back(i);
        break;
      case kDimDestination:
        for (uint32_t g : r.destinations) ix.keyed_groups[1][g].push_back(i);
        break;
      case kDimServiceId: keyed_entries[key].push_back({i, r.service_ids}); break;
      case kDimQosClass: keyed_entries[key].push_back({i, r.qos_classes}); break;
      case kDimPkey: keyed_entries[key].push_back({i, r.pkeys}); break;
      case kDimTClass: keyed_entries[key].push_back({i, r.tclasses}); break;
      default: break;
    }
  }
  for (int d : {kDimQosClass, kDimServiceId, kDimPkey, kDimTClass})
    ix.keyed[d].build(keyed_entries[d]);
  // A rule listing the same group twice is filed twice; keep each list sorted and unique.
  for (auto& role : ix.keyed_groups)
    for (auto& list : role) list.erase(std::unique(list.begin(), list.end()), list.end());

  out.policy = std::move(cp);
  return out;
}

CompileResult load_policy(std::string_view text, const Fabric* fabric) {
  return load_policy(parse_policy(text), fabric);
}

CompileResult load_policy(ParseResult parsed, const Fabric* fabric) {
  if (!parsed.ok()) return {nullptr, std::move(parsed.diagnostics)};
  CompileResult compiled = CompiledPolicy::compile(std::move(parsed.policy), fabric);
  Diagnostics all = std::move(parsed.diagnostics);
  all.insert(all.end(), compiled.diagnostics.begin(), compiled.diagnostics.end());
  std::stable_sort(all.begin(), all.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.location.line, a.location.column) <
           std::tie(b.location.line, b.location.column);
  });
  compiled.diagnostics = std::move(all);
  return compiled;
}

Diagnostics PolicyStore::reload(std::string_view text, const Fabric* fabric) {
  CompileResult r = load_policy(text, fabric);
  if (r.policy) current_.store(std::move(r.policy));
  return std::move(r.diagnostics);
}

}  // namespace rdmaqos::policy
