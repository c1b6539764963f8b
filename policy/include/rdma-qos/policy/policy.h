// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The parsed QoS policy (OpenSM qos-policy.conf syntax): what the engine understood, before it
// is resolved against a fabric and compiled for matching.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"

namespace rdmaqos::policy {

// Inclusive range; lists of ranges are kept sorted and merged, as OpenSM merges them.
struct Range {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const Range&, const Range&) = default;
};
using RangeList = std::vector<Range>;

bool ranges_contain(const RangeList& ranges, uint64_t value);

// Node types a port group can select at match time (a bit mask).
enum NodeTypeBit : uint8_t {
  kNodeTypeCa = 1,
  kNodeTypeSwitch = 2,
  kNodeTypeRouter = 4,
  kNodeTypeAll = 7,
};

struct PortName {
  std::string node_description;  // blanks kept, even when unquoted (see the compatibility table)
  int port = 0;                  // >= 1
  SourceLocation location;
};

struct PortGroup {
  std::string name;  // blanks dropped, as OpenSM does; compared case-insensitively
  std::string use;
  SourceLocation location;
  RangeList port_guids;
  std::vector<PortName> port_names;
  RangeList pkeys;  // masked with 0x7FFF
  std::vector<std::string> partitions;
  uint8_t node_types = 0;  // NodeTypeBit mask
  bool self = false;       // node-type SELF: the SM's own port
};

struct QosLevel {
  std::string name;
  std::string use;
  SourceLocation location;
  uint8_t sl = 0;
  std::optional<uint8_t> mtu_limit;    // IBA MTU code 1..5
  std::optional<uint8_t> rate_limit;   // IBA rate code 2..22
  std::optional<uint8_t> packet_life;  // 0..63
  RangeList pkeys;                     // masked with 0x7FFF
  RangeList path_bits;                 // parsed and kept; OpenSM's SA never uses them
};

// What a qos-ulps line was, kept for dump/explain.
enum class UlpKind { kNone, kSdp, kRds, kIser, kSrp, kIpoib, kAny };

struct MatchRule {
  SourceLocation location;
  int end_line = 0;  // the line of end-qos-match-rule (the ULP line itself for qos-ulps rules)
  std::string use;
  std::string text;  // the source line(s), for explain
  RangeList qos_classes;
  RangeList service_ids;
  RangeList pkeys;  // masked with 0x7FFF
  // tclass: an rdma-qos extension (OpenSM's parser rejects the keyword): traffic classes
  // 0..255, where the first one was given (for the OpenSM-compatibility warning).
  RangeList tclasses;
  std::optional<SourceLocation> tclass_location;
  std::vector<std::string> sources;       // port-group names
  std::vector<std::string> destinations;  // port-group names
  std::string level_name;                 // full rules
  SourceLocation level_location;
  std::vector<SourceLocation> source_locations, destination_locations;
  // qos-ulps rules: GUID criteria given inline and a simple level that only carries an SL.
  UlpKind ulp = UlpKind::kNone;
  std::optional<RangeList> source_guids;
  std::optional<RangeList> destination_guids;
  std::optional<uint8_t> ulp_sl;
  bool ipoib_partition_check = false;  // ipoib lines: the partition needs >= 2 full members

  bool names_no_criterion() const {
    return qos_classes.empty() && service_ids.empty() && pkeys.empty() && tclasses.empty() &&
           sources.empty() && destinations.empty() && !source_guids && !destination_guids;
  }
};

// qos-setup: parsed and validated, then (like OpenSM) not applied.
struct VlArbScope {
  SourceLocation location;
  std::vector<std::string> groups, across, across_to, across_from;
  std::vector<std::pair<uint8_t, uint8_t>> vlarb_high, vlarb_low;  // (VL, weight)
  std::optional<uint8_t> vl_high_limit;
};

struct Sl2VlScope {
  SourceLocation location;
  std::vector<std::string> groups, across, across_to, across_from;
  std::vector<uint8_t> from_ports, to_ports;  // empty with the flag set: "*"
  bool from_all = false, to_all = false;
  std::vector<uint8_t> sl2vl;  // 16 VLs when given
};

struct QosSetup {
  std::vector<VlArbScope> vlarb_scopes;
  std::vector<Sl2VlScope> sl2vl_scopes;
};

struct Policy {
  std::vector<PortGroup> port_groups;
  std::vector<QosLevel> levels;
  std::vector<MatchRule> rules;      // qos-match-rules, file order
  std::vector<MatchRule> ulp_rules;  // qos-ulps lines, file order (tried after `rules`)
  std::optional<uint8_t> ulp_default_sl;
  SourceLocation ulp_default_location;
  QosSetup setup;

  const QosLevel* find_level(std::string_view name) const;   // case-insensitive
  const PortGroup* find_group(std::string_view name) const;  // case-insensitive
  const QosLevel* default_level() const;                     // the level named DEFAULT
};

struct ParseResult {
  Policy policy;
  Diagnostics diagnostics;  // every problem found, in file order
  bool ok() const { return !has_errors(diagnostics); }
};

// Parses and validates a policy (everything that needs no fabric). Never throws on bad input.
ParseResult parse_policy(std::string_view text);

bool iequals(std::string_view a, std::string_view b);

}  // namespace rdmaqos::policy
