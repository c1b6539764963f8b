// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `fabric check`: the tables read from the fabric against the intended ones, the policy's
// levels against the tables actually read, and what does not fit the ports. Returns findings;
// the caller decides how to show them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "rdma-qos/fabric/intended.h"
#include "rdma-qos/fabric/tables.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::fabric {

enum class FindingKind {
  kDifference,     // a table (or the VL high limit) differs from the intended one
  kLevelDropped,   // a level's SL goes to VL 15 on some port: its paths carry nothing there
  kLevelNoWeight,  // a level's SL goes to a VL without arbitration weight on some port
  kTooLong,        // the intended table does not fit the port (a warning: not a difference)
  kUnread,         // a table that could not be read
};
std::string_view finding_kind_name(FindingKind k);

struct PortAt {
  uint64_t node_guid = 0;
  std::string node;  // NodeDescription
  uint8_t port = 0;
  uint16_t lid = 0;
};

struct Finding {
  FindingKind kind = FindingKind::kDifference;
  PortAt at;
  std::string table;  // "sl2vl 3->1", "vlarb-high", "vlarb-low", "vl-high-limit"
  std::string intended, actual, source;
  std::string message;        // levels, too long, unread
  std::vector<PortAt> ports;  // levels: every port where it happens (at = the first)
};

struct CheckReport {
  std::vector<Finding> findings;
  size_t ports = 0, tables = 0;
  size_t differences() const;  // differences, level problems and unread tables
  int exit_code() const;       // 0 clean, 1 differences, 2 tables could not be read
};

// The SL of every level the policy defines (qos-levels and the qos-ulps simple levels).
std::vector<std::pair<std::string, uint8_t>> policy_level_sls(const policy::Policy& policy);

CheckReport check_fabric(const FabricTables& fabric, const Planner& planner,
                         const std::vector<std::pair<std::string, uint8_t>>& levels);

std::string sl2vl_text(const Sl2Vl& t);
std::string vlarb_text(const VlArbTable& t);

nlohmann::json to_json(const CheckReport& report);
// What each port said of itself (LID, LMC, VLCap, OperationalVLs, VLHighLimit, VLArb
// capabilities): `check --ports`.
nlohmann::json ports_json(const FabricTables& fabric);
std::vector<std::string> ports_lines(const FabricTables& fabric);
// One line per finding, for people.
std::vector<std::string> to_lines(const CheckReport& report);

}  // namespace rdmaqos::fabric
