// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading what the real `saquery` (infiniband-diags) prints, so tests can compare our
// answers with OpenSM's field by field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmaqos::testbed {

// One "<Kind> dump:" block (or the ClassPortInfo block): field name -> value text.
struct SaRecord {
  std::string kind;  // "PathRecord", "NodeRecord", "SA ClassPortInfo", ...
  std::map<std::string, std::string> fields;

  // Numeric value of a field (0x-prefixed hex or decimal); nullopt if absent or not a number.
  std::optional<uint64_t> number(const std::string& field) const;
};

std::vector<SaRecord> parse_saquery_output(const std::string& text);

// The QoS-relevant part of a PathRecord as saquery prints it. Selector bits (7:6) are split
// from the 6-bit values.
struct PathAnswer {
  uint16_t slid = 0, dlid = 0, pkey = 0, qos_class = 0;
  uint8_t sl = 0;
  uint8_t mtu = 0, mtu_selector = 0;
  uint8_t rate = 0, rate_selector = 0;
  uint8_t packet_life = 0, packet_life_selector = 0;
};

std::optional<PathAnswer> path_answer(const SaRecord& record);

// Gb/s of an IBA rate code (enum ibv_rate); 0 for an unknown code. Codes are not ordered by
// speed: compare these, never the codes.
double rate_code_gbps(int code);
// Bytes of an IBA MTU code (1 = 256 ... 5 = 4096); 0 for an unknown code.
int mtu_code_bytes(int code);

}  // namespace rdmaqos::testbed
