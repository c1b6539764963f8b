// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The authorization suite's probes: every way a requester may ask for a path (raw MADs as
// sa-raw-mad sends them), and sa-raw-mad's answers read back as records.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "authorization_rules.h"

namespace rdmaqos::sad::authorization {

enum class Shape { kLids, kGids, kTable, kMultiPath };

enum class Kind {
  kPair,        // one pair, judged by expected()
  kSmKeyRight,  // as kPair, with the SA's own SM_Key: the same answer as without
  kSmKeyWrong,  // a wrong SM_Key: no answer at all
  kApm,         // alternate paths: each record's pair judged; OpenSM checks no requester
  kMulticast,   // a partition's broadcast group: only to a requester that holds its P_Key
};

struct Probe {
  Kind kind = Kind::kPair;
  std::string requester, source, destination;
  Ask ask;
  Shape shape = Shape::kLids;
  std::string hex;
  std::string label;
  uint16_t group_pkey = 0;  // kMulticast
};

struct Record {
  uint64_t sguid = 0, dguid = 0;
  uint16_t pkey = 0;
  uint8_t sl = 0;
};

struct Answer {
  nlohmann::json json;  // sa-raw-mad's line
  bool answered = false;
  std::string status;
  std::vector<Record> records;
};

// sa-raw-mad's line for one probe, read.
Answer parse_answer(const nlohmann::json& j);
// The CAs of the fabric, and the one a port GUID belongs to (the GUID in hex if none).
const std::vector<std::string>& cas();
std::string node_of(uint64_t guid);
// Every requester, every pair, plainly and forced; SM_Key probes; alternate paths; multicast.
std::vector<Probe> make_probes();
// Wrong SM_Keys: no answer (each waits out sa-raw-mad's timeout, so a few only).
std::vector<Probe> make_wrong_key_probes();
std::string describe(const Probe& p);

}  // namespace rdmaqos::sad::authorization
