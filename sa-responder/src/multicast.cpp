// The IPoIB broadcast groups OpenSM creates from its partitions configuration, and its
// PathRecord answer for a multicast DGID (see multicast.h). Observed on ibsim with OpenSM
// 3.3.23: one group per `ipoib` partition, MLIDs 0xC000 up in file order, mtu=/rate=/sl= of
// the partition (defaults 2048 and 10 Gb/s), packet life subnet_timeout, hop limit 0, and
// answers only to requests that name no source (no port has joined).
#include "rdma-qos/sa-responder/multicast.h"

#include <charconv>
#include <string>

namespace rdmaqos::sad {
namespace {

constexpr uint8_t kDefaultMtu = 4;   // 2048 bytes
constexpr uint8_t kDefaultRate = 3;  // 10 Gb/s

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<unsigned long> number(std::string_view s) {
  s = trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  unsigned long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The text without comments (# to the end of the line).
std::string without_comments(std::string_view text) {
  std::string out;
  bool comment = false;
  for (char c : text) {
    if (c == '#') comment = true;
    if (c == '\n') comment = false;
    if (!comment) out.push_back(c);
  }
  return out;
}

MulticastGroup broadcast_group(uint16_t pkey, uint8_t sl, uint8_t mtu, uint8_t rate, uint8_t life) {
  MulticastGroup g;
  const uint16_t full = static_cast<uint16_t>(pkey | 0x8000);
  g.mgid = {0xff,
            0x12,
            0x40,
            0x1b,
            static_cast<uint8_t>(full >> 8),
            static_cast<uint8_t>(full),
            0,
            0,
            0,
            0,
            0,
            0,
            0xff,
            0xff,
            0xff,
            0xff};
  g.pkey = full;
  g.sl = sl;
  g.mtu = mtu;
  g.rate = rate;
  g.packet_life = life;
  return g;
}

}  // namespace

std::vector<MulticastGroup> ipoib_broadcast_groups(std::string_view partitions_text,
                                                   uint8_t subnet_timeout) {
  std::vector<MulticastGroup> out;
  auto add = [&](MulticastGroup g) {
    // A partition defined twice keeps its first group (OpenSM finds the MGID it made).
    if (find_group(out, g.mgid) != nullptr) return;
    g.mlid = static_cast<uint16_t>(kFirstMulticastLid + out.size());
    out.push_back(g);
  };
  if (trim(partitions_text).empty()) {
    add(broadcast_group(0x7FFF, 0, kDefaultMtu, kDefaultRate, subnet_timeout));
    return out;
  }
  const std::string text = without_comments(partitions_text);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    std::string_view definition = std::string_view(text).substr(start, end - start);
    start = end + 1;
    const size_t colon = definition.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view header = definition.substr(0, colon);
    std::optional<unsigned long> pkey;
    bool ipoib = false;
    uint8_t sl = 0, mtu = kDefaultMtu, rate = kDefaultRate;
    bool first = true;
    while (!header.empty()) {
      size_t comma = header.find(',');
      std::string_view item = trim(header.substr(0, comma));
      header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
      const size_t eq = item.find('=');
      std::string_view key = trim(item.substr(0, eq));
      std::optional<unsigned long> value =
          eq == std::string_view::npos ? std::nullopt : number(item.substr(eq + 1));
      if (first) {
        pkey = value;
        first = false;
      } else if (key == "ipoib") {
        ipoib = true;
      } else if (key == "sl" && value && *value <= 15) {
        sl = static_cast<uint8_t>(*value);
      } else if (key == "mtu" && value && *value >= 1 && *value <= 5) {
        mtu = static_cast<uint8_t>(*value);
      } else if (key == "rate" && value && *value >= 2 && *value <= 22) {
        rate = static_cast<uint8_t>(*value);
      }
    }
    if (ipoib && pkey && *pkey <= 0xFFFF) {
      add(broadcast_group(static_cast<uint16_t>(*pkey & 0x7FFF), sl, mtu, rate, subnet_timeout));
    }
  }
  return out;
}

const MulticastGroup* find_group(const std::vector<MulticastGroup>& groups, const sa::Gid& mgid) {
  for (const MulticastGroup& g : groups) {
    if (g.mgid == mgid) return &g;
  }
  return nullptr;
}

std::optional<sa::PathRecord> multicast_path(const MulticastGroup& group,
                                             const sa::PathRecord& request, uint64_t comp_mask,
                                             bool get) {
  namespace pr = sa::pr_mask;
  auto has = [comp_mask](uint64_t bit) { return (comp_mask & bit) != 0; };
  // The group's MLID, members (none known), PKey, SL, and its zero flow label, hop limit and
  // traffic class; MTU, rate and packet life are not checked.
  if (has(pr::kDlid) && request.dlid != group.mlid) return std::nullopt;
  if (has(pr::kSgid) || has(pr::kSlid)) return std::nullopt;
  if (has(pr::kPKey) && request.pkey != group.pkey) return std::nullopt;
  if (has(pr::kSl) && request.sl != group.sl) return std::nullopt;
  if (has(pr::kNumbPath) && !get && request.numb_path == 0) return std::nullopt;
  if (has(pr::kFlowLabel) && request.flow_label != 0) return std::nullopt;
  if (has(pr::kHopLimit) && request.hop_limit != 0) return std::nullopt;
  if (has(pr::kTClass) && request.tclass != 0) return std::nullopt;
  // The request's record with the group's values written over it.
  sa::PathRecord r = request;
  r.dgid = group.mgid;
  r.dlid = group.mlid;
  r.tclass = 0;
  r.reversible = false;
  r.numb_path = 1;
  r.pkey = group.pkey;
  r.mtu_selector = sa::Selector::kExactly;
  r.mtu = group.mtu;
  r.rate_selector = sa::Selector::kExactly;
  r.rate = group.rate;
  r.packet_life_selector = sa::Selector::kExactly;
  r.packet_life = group.packet_life;
  r.sl = group.sl;
  r.qos_class = 0;
  r.raw_traffic = false;
  r.flow_label = 0;
  r.hop_limit = 0;
  return r;
}

}  // namespace rdmaqos::sad
