// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The caller's fabric description, OpenSM's partitions.conf syntax and the ibnetdiscover /
// ibsim topology format, read into it.
#include "rdma-qos/policy/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <unordered_map>

#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

uint8_t node_type_bit(NodeType type) {
  switch (type) {
    case NodeType::kCa: return kNodeTypeCa;
    case NodeType::kSwitch: return kNodeTypeSwitch;
    case NodeType::kRouter: return kNodeTypeRouter;
  }
  return 0;
}

int Partition::full_members() const {
  return static_cast<int>(
      std::count_if(members.begin(), members.end(), [](const auto& m) { return m.full; }));
}

const FabricNode* Fabric::node_of_port(uint64_t port_guid) const {
  for (const auto& n : nodes)
    for (const auto& [port, guid] : n.port_guids)
      if (guid == port_guid) return &n;
  return nullptr;
}

const Partition* Fabric::partition(uint16_t pkey) const {
  for (const auto& p : partitions)
    if (p.pkey == (pkey & 0x7FFF)) return &p;
  return nullptr;
}

const Partition* Fabric::partition(std::string_view name) const {
  for (const auto& p : partitions)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<Partition> default_partitions(const Fabric& fabric) {
  Partition p{"Default", 0x7FFF, true, std::nullopt, {}, {1, 1}, {}, {}, {}};
  for (const auto& n : fabric.nodes)
    for (const auto& pg : n.port_guids) p.members.push_back({pg.second, true});
  return {p};
}

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  uint64_t v = std::strtoull(t.c_str(), &end, 0);
  if (*end != '\0') return std::nullopt;
  return v;
}

// Line and column of offsets met in increasing order: each call counts on from the last one,
// so a file of many statements is read once (counting from the start for each statement made
// parse_partitions quadratic: 200,000 statements on one line took minutes).
class LocationCounter {
 public:
  explicit LocationCounter(std::string_view text) : text_(text) {}

  SourceLocation at(size_t offset) {
    for (; pos_ < offset && pos_ < text_.size(); ++pos_) {
      if (text_[pos_] == '\n') {
        ++location_.line;
        location_.column = 1;
      } else {
        ++location_.column;
      }
    }
    return location_;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  SourceLocation location_{1, 1};
};

// A port named twice in one partition (`ALL=limited, 0x...=full`, or ALL twice) is one member,
// with the membership it was named with last: OpenSM's osm_prtn_add_port takes a port already
// in the partition out before adding it again ("Will overwrite"). Its first place is kept.
void keep_last_membership(std::vector<PartitionMember>& members) {
  std::unordered_map<uint64_t, size_t> first;
  std::vector<PartitionMember> out;
  out.reserve(members.size());
  for (const PartitionMember& m : members) {
    auto [it, added] = first.try_emplace(m.port_guid, out.size());
    if (added)
      out.push_back(m);
    else
      out[it->second].full = m.full;
  }
  members = std::move(out);
}

// A statement whose P_Key an earlier one defined adds to that partition, as OpenSM's
// osm_prtn_make_new hands back the partition it has ("Duplicated partition definition ... Will use
// it"): the first name stays, the members join (parse_partitions keeps each port's last
// membership once all are read), the SL is the later statement's (OpenSM sets it from every
// statement, 0 when not given), and the IPoIB broadcast group, made by the first statement that
// asks for one, keeps that statement's SL, MTU and rate. `by_pkey` indexes `partitions` by P_Key,
// so that a file of many statements is not read in quadratic time.
void fold_into(std::vector<Partition>& partitions, std::unordered_map<uint16_t, size_t>& by_pkey,
               Partition p) {
  const uint16_t pkey = p.pkey & 0x7FFF;
  auto known = pkey != 0 ? by_pkey.find(pkey) : by_pkey.end();  // 0: refused (an error)
  if (known == by_pkey.end()) {
    if (pkey != 0) by_pkey.emplace(pkey, partitions.size());
    partitions.push_back(std::move(p));
    return;
  }
  Partition& same = partitions[known->second];
  same.members.insert(same.members.end(), p.members.begin(), p.members.end());
  if (same.ipoib && !same.ipoib_group_sl) same.ipoib_group_sl = same.sl.value_or(0);
  same.sl = p.sl;
  if (p.ipoib && !same.ipoib) {
    same.ipoib = true;
    same.mtu = p.mtu;
    same.rate = p.rate;
  }
}

}  // namespace

PartitionsResult parse_partitions(std::string_view text, const Fabric& fabric) {
  PartitionsResult out;
  std::unordered_map<uint16_t, size_t> by_pkey;  // out.partitions' index of each P_Key
  // Comments out, offsets kept (replaced by blanks) so locations stay right.
  std::string clean(text);
  LocationCounter locations(text);
  for (size_t i = 0; i < clean.size(); ++i)
    if (clean[i] == '#')
      while (i < clean.size() && clean[i] != '\n') clean[i++] = ' ';
  size_t start = 0;
  while (start < clean.size()) {
    while (start < clean.size() && std::isspace(static_cast<unsigned char>(clean[start]))) ++start;
    if (start >= clean.size()) break;
    size_t semi = clean.find(';', start);
    if (semi == std::string::npos) {
      if (!trim(std::string_view(clean).substr(start)).empty())
        out.diagnostics.push_back({Severity::kError, locations.at(start),
                                   "partition definition does not end with ';'", ""});
      break;
    }
    std::string_view stmt = std::string_view(clean).substr(start, semi - start);
    size_t lead = 0;
    while (lead < stmt.size() && std::isspace(static_cast<unsigned char>(stmt[lead]))) ++lead;
    SourceLocation at = locations.at(start + lead);
    start = semi + 1;
    if (trim(stmt).empty()) continue;
    size_t colon = stmt.find(':');
    std::string header = trim(stmt.substr(0, colon));
    std::string members = colon == std::string_view::npos ? "" : trim(stmt.substr(colon + 1));
    Partition p;
    p.location = at;
    bool default_full = false;
    size_t pos = 0;
    int field = 0;
    while (pos <= header.size()) {
      size_t comma = header.find(',', pos);
      if (comma == std::string::npos) comma = header.size();
      std::string item = trim(std::string_view(header).substr(pos, comma - pos));
      pos = comma + 1;
      size_t eq = item.find('=');
      std::string key = trim(item.substr(0, eq));
      std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
      if (field++ == 0) {
        p.name = key;
        auto v = parse_u64(value);
        if (!v || *v > 0xFFFF) {
          out.diagnostics.push_back(
              {Severity::kError, at, fmt::format("partition '{}' has no valid pkey", key), ""});
          p.pkey = 0;
        } else {
          p.pkey = static_cast<uint16_t>(*v & 0x7FFF);
        }
      } else if (key == "ipoib") {
        p.ipoib = true;
      } else if (key == "sl") {
        auto v = parse_u64(value);
        if (v && *v <= 15) p.sl = static_cast<uint8_t>(*v);
      } else if (key == "mtu") {
        auto v = parse_u64(value);
        if (v && *v >= 1 && *v <= 5) p.mtu = static_cast<uint8_t>(*v);
      } else if (key == "rate") {
        auto v = parse_u64(value);
        if (v && *v >= 2 && *v <= 22) p.rate = static_cast<uint8_t>(*v);
      } else if (key == "defmember") {
        default_full = value == "full" || value == "both";
      } else if (!key.empty()) {
        // scope=, mgroup= ... concern multicast groups this project does not create.
      }
    }
    pos = 0;
    while (pos < members.size()) {
      size_t comma = members.find(',', pos);
      if (comma == std::string::npos) comma = members.size();
      std::string item = trim(std::string_view(members).substr(pos, comma - pos));
      pos = comma + 1;
      if (item.empty()) continue;
      size_t eq = item.find('=');
      std::string who = trim(item.substr(0, eq));
      std::string how = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
      bool full = how.empty() ? default_full : (how == "full" || how == "both");
      auto add_nodes = [&](auto pred) {
        for (const auto& n : fabric.nodes)
          if (pred(n))
            for (const auto& pg : n.port_guids) p.members.push_back({pg.second, full});
      };
      if (who == "ALL") {
        add_nodes([](const FabricNode&) { return true; });
      } else if (who == "ALL_CAS") {
        add_nodes([](const FabricNode& n) { return n.type == NodeType::kCa; });
      } else if (who == "ALL_SWITCHES") {
        add_nodes([](const FabricNode& n) { return n.type == NodeType::kSwitch; });
      } else if (who == "ALL_ROUTERS") {
        add_nodes([](const FabricNode& n) { return n.type == NodeType::kRouter; });
      } else if (who == "SELF") {
        p.members.push_back({fabric.sm_port_guid, full});
      } else if (auto g = parse_u64(who)) {
        p.members.push_back({*g, full});
      } else {
        out.diagnostics.push_back(
            {Severity::kError, at, fmt::format("unknown partition member '{}'", who), ""});
      }
    }
    fold_into(out.partitions, by_pkey, std::move(p));
  }
  for (Partition& p : out.partitions) keep_last_membership(p.members);
  return out;
}

namespace {

// A port number or count of a net file: NodeInfo's NumPorts is 8 bits and port 255 does not
// exist, so anything outside 0-254 (or not a number) is refused rather than allocated.
std::optional<int> parse_port_number(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || v < 0 || v > 254) return std::nullopt;
  return v;
}

}  // namespace

FabricResult parse_net_file(std::string_view text) {
  FabricResult out;
  Fabric& f = out.fabric;
  uint64_t pending_guid = 0;
  FabricNode* current = nullptr;
  size_t start = 0;
  int line_no = 0;
  auto finish = [&]() {
    if (!current) return;
    if (current->type == NodeType::kSwitch) {
      current->port_guids = {{0, current->node_guid}};
    } else if (current->port_guids.empty()) {
      for (int p = 1; p <= current->num_ports; ++p)
        current->port_guids.push_back({p, current->node_guid + static_cast<uint64_t>(p)});
    }
  };
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line = trim(text.substr(start, nl - start));
    start = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    auto starts = [&](std::string_view p) { return line.rfind(p, 0) == 0; };
    if (starts("caguid=") || starts("switchguid=") || starts("rtguid=")) {
      std::string v = line.substr(line.find('=') + 1);
      v = v.substr(0, v.find('('));
      pending_guid = parse_u64(v).value_or(0);
      continue;
    }
    if (starts("Ca") || starts("Switch") || starts("Rt")) {
      finish();
      FabricNode n;
      n.type = starts("Ca") ? NodeType::kCa : starts("Rt") ? NodeType::kRouter : NodeType::kSwitch;
      n.node_guid = pending_guid;
      pending_guid = 0;
      size_t q1 = line.find('"');
      size_t q2 = q1 == std::string::npos ? q1 : line.find('"', q1 + 1);
      std::string kind_ports = trim(line.substr(0, q1));
      std::string id = q2 == std::string::npos ? "" : line.substr(q1 + 1, q2 - q1 - 1);
      const size_t gap = kind_ports.find_first_of(" \t");
      const std::string count = gap == std::string::npos ? "" : kind_ports.substr(gap + 1);
      if (auto ports = parse_port_number(count)) {
        n.num_ports = *ports;
      } else {
        out.diagnostics.push_back(
            {Severity::kError,
             {line_no, 1},
             fmt::format("node '{}' has port count '{}': expected a number from 0 to 254", id,
                         count),
             ""});
      }
      n.description = id;
      size_t hash = q2 == std::string::npos ? q2 : line.find('#', q2);
      if (hash != std::string::npos) {
        size_t d1 = line.find('"', hash);
        size_t d2 = d1 == std::string::npos ? d1 : line.find('"', d1 + 1);
        if (d2 != std::string::npos) n.description = line.substr(d1 + 1, d2 - d1 - 1);
      }
      if (n.node_guid == 0)
        out.diagnostics.push_back({Severity::kError,
                                   {line_no, 1},
                                   fmt::format("node '{}' has no GUID line before it", id),
                                   ""});
      f.nodes.push_back(std::move(n));
      current = &f.nodes.back();
      continue;
    }
    if (line[0] == '[' && current && current->type != NodeType::kSwitch) {
      size_t rb = line.find(']');
      auto number = parse_port_number(
          std::string_view(line).substr(1, rb == std::string::npos ? std::string::npos : rb - 1));
      if (!number) {
        out.diagnostics.push_back(
            {Severity::kError, {line_no, 1}, "port number must be from 0 to 254", ""});
        continue;
      }
      const int port = *number;
      uint64_t guid = current->node_guid + static_cast<uint64_t>(port);
      if (rb != std::string::npos && rb + 1 < line.size() && line[rb + 1] == '(') {
        size_t rp = line.find(')', rb);
        if (auto g = parse_u64("0x" + line.substr(rb + 2, rp - rb - 2))) guid = *g;
      }
      current->port_guids.push_back({port, guid});
    }
  }
  finish();
  for (const auto& n : f.nodes)
    if (n.type == NodeType::kCa && !n.port_guids.empty()) {
      f.sm_port_guid = n.port_guids.front().second;
      break;
    }
  f.partitions = default_partitions(f);
  return out;
}

}  // namespace rdmaqos::policy
