// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Parser for saquery's "field.....value" dumps.
#include "rdma-qos/testbed/saquery.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace rdmaqos::testbed {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::optional<uint64_t> SaRecord::number(const std::string& field) const {
  auto it = fields.find(field);
  if (it == fields.end() || it->second.empty()) return std::nullopt;
  const char* text = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') return std::nullopt;
  return v;
}

std::vector<SaRecord> parse_saquery_output(const std::string& text) {
  std::vector<SaRecord> records;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty()) continue;
    // A block header: "PathRecord dump:" or "SA ClassPortInfo:" (no run of dots).
    if (t.back() == ':' && t.find("..") == std::string::npos) {
      std::string kind = t.substr(0, t.size() - 1);
      if (kind.size() > 5 && kind.compare(kind.size() - 5, 5, " dump") == 0)
        kind.resize(kind.size() - 5);
      records.push_back(SaRecord{kind, {}});
      continue;
    }
    size_t dots = t.find("..");
    if (dots == std::string::npos || records.empty()) continue;
    size_t value = t.find_first_not_of('.', dots);
    std::string key = trim(t.substr(0, dots));
    records.back().fields[key] = value == std::string::npos ? "" : trim(t.substr(value));
  }
  return records;
}

std::optional<PathAnswer> path_answer(const SaRecord& r) {
  if (r.kind != "PathRecord") return std::nullopt;
  auto slid = r.number("slid"), dlid = r.number("dlid"), pkey = r.number("pkey"),
       qos = r.number("qos_class"), sl = r.number("sl"), mtu = r.number("mtu"),
       rate = r.number("rate"), life = r.number("pkt_life");
  if (!slid || !dlid || !pkey || !qos || !sl || !mtu || !rate || !life) return std::nullopt;
  PathAnswer a;
  a.slid = static_cast<uint16_t>(*slid);
  a.dlid = static_cast<uint16_t>(*dlid);
  a.pkey = static_cast<uint16_t>(*pkey);
  a.qos_class = static_cast<uint16_t>(*qos);
  a.sl = static_cast<uint8_t>(*sl);
  a.mtu = static_cast<uint8_t>(*mtu & 0x3f);
  a.mtu_selector = static_cast<uint8_t>((*mtu >> 6) & 3);
  a.rate = static_cast<uint8_t>(*rate & 0x3f);
  a.rate_selector = static_cast<uint8_t>((*rate >> 6) & 3);
  a.packet_life = static_cast<uint8_t>(*life & 0x3f);
  a.packet_life_selector = static_cast<uint8_t>((*life >> 6) & 3);
  return a;
}

double rate_code_gbps(int code) {
  switch (code) {
    case 2: return 2.5;
    case 3: return 10;
    case 4: return 30;
    case 5: return 5;
    case 6: return 20;
    case 7: return 40;
    case 8: return 60;
    case 9: return 80;
    case 10: return 120;
    case 11: return 14;
    case 12: return 56;
    case 13: return 112;
    case 14: return 168;
    case 15: return 25;
    case 16: return 100;
    case 17: return 200;
    case 18: return 300;
    case 19: return 28;
    case 20: return 50;
    case 21: return 400;
    case 22: return 600;
    case 23: return 800;
    case 24: return 1200;
    default: return 0;
  }
}

int mtu_code_bytes(int code) {
  return code >= 1 && code <= 5 ? 128 << code : 0;
}

}  // namespace rdmaqos::testbed
