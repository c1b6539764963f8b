// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// LFT dumps for OpenSM's `file` routing engine (see lfts_dump.h).
#include "lfts_dump.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rdmaqos::osmp {

std::string dump_lfts(testbed::IbFabricOptions options, const std::string& engine) {
  // log_flags 0x43: errors, info and OSM_LOG_ROUTING, the flag OpenSM writes its routing dumps
  // under (into dump_files_dir) once the subnet is up, before the SA answers; the log flushed at
  // once, to be read for the engine that routed.
  options.opensm_conf +=
      "routing_engine " + engine + "\nlog_flags 0x43\ndump_files_dir @DIR@\nforce_log_flush TRUE\n";
  testbed::IbFabric fabric(std::move(options));
  if (fabric.opensm_log().find(engine + " tables configured") == std::string::npos)
    throw std::runtime_error(engine + " did not route: " + fabric.opensm_log().substr(0, 4000));
  std::ifstream in(fabric.dir() + "/opensm-lfts.dump");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("Unicast lids") == std::string::npos)
    throw std::runtime_error("OpenSM wrote no opensm-lfts.dump in " + fabric.dir());
  return text.str();
}

std::string without_routes_to(const std::string& dump, uint64_t keep_switch_guid, uint16_t lid,
                              int count) {
  std::istringstream in(dump);
  std::string out;
  bool keep = true;  // the lines of the switch being read are all kept
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Unicast lids", 0) == 0) {
      // "Unicast lids [0-N] of switch Lid L guid 0xGUID ('description'):"
      const auto at = line.find(" guid 0x");
      keep = at != std::string::npos &&
             std::stoull(line.substr(at + 8), nullptr, 16) == keep_switch_guid;
    } else if (!keep && line.rfind("0x", 0) == 0) {
      // "0xLID PORT # ...": one LFT entry.
      const auto entry = std::stoul(line.substr(2), nullptr, 16);
      if (entry >= lid && entry < lid + static_cast<unsigned>(count)) continue;
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace rdmaqos::osmp
