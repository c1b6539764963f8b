// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// opensm.conf QoS options and the VL arbitration arithmetic.
#include "rdma-qos/policy/opensm_conf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <type_traits>

#include "rdma-qos/common/result.h"

namespace rdmaqos::policy {

std::string_view port_class_prefix(PortClass c) {
  switch (c) {
    case PortClass::kCa: return "ca";
    case PortClass::kRouter: return "rtr";
    case PortClass::kSwitchPort0: return "sw0";
    case PortClass::kSwitchExternal: return "swe";
  }
  return "?";
}

QosPortConfig default_qos_port_config() {
  QosPortConfig c;
  c.max_vls = 15;
  c.high_limit = 0;
  for (uint8_t vl = 0; vl < 15; ++vl) {
    c.vlarb_high.push_back({vl, static_cast<uint8_t>(vl == 0 ? 4 : 0)});
    c.vlarb_low.push_back({vl, static_cast<uint8_t>(vl == 0 ? 0 : 4)});
  }
  for (uint8_t sl = 0; sl < 16; ++sl) c.sl2vl[sl] = sl < 15 ? sl : 7;
  return c;
}

namespace {

std::optional<long> integer(std::string_view s) {
  std::string t(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(t.c_str(), &end, 0);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

// The `sep`-separated items of a value, each trimmed, walked in place: no copy and no vector
// (a heap allocation per item made this reader mostly malloc under the sanitizers). n
// separators give n + 1 items, so an empty value is one empty item.
class Items {
 public:
  Items(std::string_view s, char sep) : rest_(s), sep_(sep) {}
  bool next(std::string_view& item) {
    if (done_) return false;
    const size_t end = rest_.find(sep_);
    item = trim(rest_.substr(0, end));
    if (end == std::string_view::npos)
      done_ = true;
    else
      rest_.remove_prefix(end + 1);
    return true;
  }

 private:
  std::string_view rest_;
  char sep_;
  bool done_ = false;
};

// A bad value of a qos_ option: the caller makes it a diagnostic at the option.
Error bad_value(std::string why) {
  return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

// One option's value applied to a port config, or what is wrong with it.
Result<void> apply(QosPortConfig& c, std::string_view field, std::string_view value) {
  if (field == "max_vls") {
    auto v = integer(value);
    if (!v || *v < 1 || *v > 15)
      return bad_value(fmt::format("max_vls '{}' is out of range (1..15)", value));
    c.max_vls = static_cast<int>(*v);
  } else if (field == "high_limit") {
    auto v = integer(value);
    if (!v || *v < 0 || *v > 255)
      return bad_value(fmt::format("high_limit '{}' is out of range (0..255)", value));
    c.high_limit = static_cast<int>(*v);
  } else if (field == "vlarb_high" || field == "vlarb_low") {
    std::vector<VlArbEntry> table;
    Items items(value, ',');
    for (std::string_view item; items.next(item);) {
      const size_t colon = item.find(':');
      const bool pair =
          colon != std::string_view::npos && item.find(':', colon + 1) == std::string_view::npos;
      auto vl = pair ? integer(trim(item.substr(0, colon))) : std::nullopt;
      auto w = pair ? integer(trim(item.substr(colon + 1))) : std::nullopt;
      if (!vl || !w) return bad_value(fmt::format("{} entry '{}' is not VL:weight", field, item));
      if (*vl < 0 || *vl > 14)
        return bad_value(fmt::format("{} VL {} is out of range (0..14)", field, *vl));
      if (*w < 0 || *w > 255)
        return bad_value(fmt::format("{} weight {} is out of range (0..255)", field, *w));
      table.push_back({static_cast<uint8_t>(*vl), static_cast<uint8_t>(*w)});
    }
    if (table.size() > 64)
      return bad_value(fmt::format("{} has {} entries (at most 64)", field, table.size()));
    (field == "vlarb_high" ? c.vlarb_high : c.vlarb_low) = table;
  } else if (field == "sl2vl") {
    const size_t count = 1 + static_cast<size_t>(std::count(value.begin(), value.end(), ','));
    if (count != 16)
      return bad_value(fmt::format("sl2vl has {} entries, needs 16 (one VL per SL)", count));
    Items items(value, ',');
    std::string_view item;
    for (size_t sl = 0; sl < 16 && items.next(item); ++sl) {
      auto v = integer(item);
      if (!v || *v < 0 || *v > 15)
        return bad_value(fmt::format("sl2vl VL '{}' for SL {} is out of range (0..15)", item, sl));
      c.sl2vl[sl] = static_cast<uint8_t>(*v);
    }
  }
  return {};
}

// An opensm.conf boolean as OpenSM reads it: TRUE exactly, anything else FALSE. A value meant as
// true but spelled otherwise ("true", "yes", "on", "1") is FALSE to OpenSM, so it is warned of.
bool opensm_boolean(std::string_view key, std::string_view value, SourceLocation at,
                    OpenSmConfResult& out) {
  if (value == "TRUE") return true;
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") {
    out.diagnostics.push_back(
        {Severity::kWarning, at,
         fmt::format("{} '{}' is FALSE to OpenSM, which takes only TRUE (upper case) as true", key,
                     value),
         fmt::format("write '{} TRUE'", key)});
  }
  return false;
}

// The SmOptions keys; true when `key` is one of them (a bad value adds a diagnostic).
bool read_sm_option(std::string_view key, std::string_view value, SourceLocation at,
                    OpenSmConfResult& out) {
  SmOptions& sm = out.sm;
  auto number = [&](unsigned long long max) -> std::optional<unsigned long long> {
    if (value.empty() || value[0] == '-') return std::nullopt;
    const std::string text(value);  // strtoull reads up to a NUL
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 0);
    if (*end != '\0' || errno != 0 || v > max) return std::nullopt;
    return v;
  };
  auto bad = [&](std::string_view range) {
    out.diagnostics.push_back({Severity::kError, at,
                               fmt::format("{} '{}' is not a number in {}", key, value, range),
                               ""});
  };
  // A number up to `max` into its (optional) field, or the diagnostic naming `range`.
  auto bounded = [&](unsigned long long max, std::string_view range, auto& field) {
    using Value = typename std::remove_reference_t<decltype(field)>::value_type;
    if (auto v = number(max))
      field = static_cast<Value>(*v);
    else
      bad(range);
  };
  if (key == "qos_policy_file" || key == "partition_config_file") {
    if (value.empty() || value == "(null)") return true;
    (key == "qos_policy_file" ? sm.qos_policy_file : sm.partition_config_file) = value;
  } else if (key == "subnet_timeout") {
    bounded(31, "0..31", sm.subnet_timeout);
  } else if (key == "sm_sl") {
    bounded(15, "0..15", sm.sm_sl);
  } else if (key == "routing_engine") {
    sm.routing_engines.clear();
    for (size_t at_comma = 0; at_comma <= value.size();) {
      size_t next = value.find(',', at_comma);
      if (next == std::string_view::npos) next = value.size();
      std::string_view name = value.substr(at_comma, next - at_comma);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (!name.empty() && name != "(null)") sm.routing_engines.emplace_back(name);
      at_comma = next + 1;
    }
  } else if (key == "sa_key" || key == "m_key") {
    bounded(~0ULL, "0..0xffffffffffffffff", key == "sa_key" ? sm.sa_key : sm.m_key);
  } else if (key == "use_original_extended_sa_rates_only") {
    sm.original_extended_rates_only = opensm_boolean(key, value, at, out);
  } else if (key == "max_wire_smps") {
    // OpenSM takes 0 as "no bound" and refuses more than 0x7fffffff.
    bounded(0x7FFFFFFF, "0..0x7fffffff", sm.max_wire_smps);
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool routing_engine_assigns_sls(std::string_view name) {
  return name == "lash" || name == "dfsssp" || name == "nue" || name == "torus-2QoS";
}

OpenSmConfResult parse_opensm_conf(std::string_view text) {
  OpenSmConfResult out;
  struct Option {
    std::string_view prefix, field, value;  // into `text` and port_class_prefix()
    SourceLocation at;
  };
  std::vector<Option> options;
  size_t start = 0;
  int line_no = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    size_t b = 0;
    while (b < line.size() && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
    if (b >= line.size() || line[b] == '#') continue;
    size_t e = b;
    while (e < line.size() && !std::isspace(static_cast<unsigned char>(line[e]))) ++e;
    std::string_view key = line.substr(b, e - b);
    std::string_view value = trim(line.substr(e));
    if (key == "qos") {
      // As OpenSM: only TRUE turns QoS on (with it off, OpenSM answers every path SL 0).
      out.config.qos = opensm_boolean(key, value, {line_no, static_cast<int>(b) + 1}, out);
      continue;
    }
    if (read_sm_option(key, value, {line_no, static_cast<int>(b) + 1}, out)) continue;
    if (!key.starts_with("qos_")) continue;
    std::string_view rest = key.substr(4), prefix;
    for (PortClass c : kPortClasses) {
      std::string_view p = port_class_prefix(c);
      if (rest.starts_with(p) && rest.size() > p.size() && rest[p.size()] == '_') {
        prefix = p;
        rest = rest.substr(p.size() + 1);
      }
    }
    if (rest != "max_vls" && rest != "high_limit" && rest != "vlarb_high" && rest != "vlarb_low" &&
        rest != "sl2vl")
      continue;                                        // qos_policy_file and others
    if (value.empty() || value == "(null)") continue;  // "use the default"
    options.push_back({prefix, rest, value, {line_no, static_cast<int>(b) + 1}});
  }
  QosPortConfig base = default_qos_port_config();
  for (const auto& o : options)
    if (o.prefix.empty()) {
      if (auto applied = apply(base, o.field, o.value); !applied)
        out.diagnostics.push_back(
            {Severity::kError, o.at, fmt::format("qos_{}", applied.error().message), ""});
    }
  for (PortClass c : kPortClasses) {
    QosPortConfig pc = base;
    for (const auto& o : options)
      if (o.prefix == port_class_prefix(c)) {
        if (auto applied = apply(pc, o.field, o.value); !applied)
          out.diagnostics.push_back({Severity::kError, o.at,
                                     fmt::format("qos_{}_{}", o.prefix, applied.error().message),
                                     ""});
      }
    out.config.ports[static_cast<size_t>(c)] = pc;
  }
  return out;
}

VlArbAnalysis analyze_vlarb(const QosPortConfig& c, int mtu_bytes) {
  VlArbAnalysis a;
  const uint32_t packet_credits = static_cast<uint32_t>((mtu_bytes + 63) / 64);
  std::array<uint32_t, 15> high{}, low{};
  auto sum = [&](const std::vector<VlArbEntry>& table, std::array<uint32_t, 15>& w,
                 std::string_view name) {
    for (const auto& e : table) {
      if (e.weight == 0) continue;
      if (e.vl >= c.max_vls) {
        a.warnings.push_back(fmt::format("{} names VL {}, which is not configured (max_vls {})",
                                         name, e.vl, c.max_vls));
        continue;
      }
      if (e.weight < packet_credits)
        a.warnings.push_back(fmt::format(
            "{} weight {} for VL {} is below one {}-byte packet ({} credits): the VL still "
            "sends a whole packet per turn, so weights below that do not set its share",
            name, e.weight, e.vl, mtu_bytes, packet_credits));
      w[e.vl] += e.weight;
    }
  };
  sum(c.vlarb_high, high, "vlarb_high");
  sum(c.vlarb_low, low, "vlarb_low");
  uint64_t high_total = 0, low_total = 0;
  for (int vl = 0; vl < 15; ++vl) {
    high_total += high[static_cast<size_t>(vl)];
    low_total += low[static_cast<size_t>(vl)];
  }
  if (c.high_limit == 255) {
    a.high_burst_bytes = std::nullopt;
  } else {
    a.high_burst_bytes = c.high_limit == 0 ? static_cast<uint64_t>(mtu_bytes)
                                           : static_cast<uint64_t>(c.high_limit) * 4096;
  }
  if (high_total == 0)
    a.high_fraction = 0;
  else if (low_total == 0 || !a.high_burst_bytes)
    a.high_fraction = 1;
  else
    a.high_fraction = static_cast<double>(*a.high_burst_bytes) /
                      static_cast<double>(*a.high_burst_bytes + static_cast<uint64_t>(mtu_bytes));
  if (!a.high_burst_bytes && high_total && low_total)
    a.warnings.push_back(
        "high_limit 255 is unbounded: saturated high-priority VLs starve the "
        "low-priority ones");
  for (int vl = 0; vl < 15; ++vl) {
    const uint32_t h = high[static_cast<size_t>(vl)], l = low[static_cast<size_t>(vl)];
    if (!h && !l) continue;
    VlShare s{static_cast<uint8_t>(vl), h, l, 0};
    if (h) s.share += a.high_fraction * h / static_cast<double>(high_total);
    if (l) s.share += (1 - a.high_fraction) * l / static_cast<double>(low_total);
    a.vls.push_back(s);
  }
  return a;
}

Diagnostics check_level_sls(const Policy& policy, const QosConfig& config) {
  Diagnostics out;
  auto check = [&](std::string_view name, uint8_t sl, SourceLocation at) {
    std::string tables;
    for (PortClass c : kPortClasses)
      if (config.port(c).sl2vl[sl] == 15)
        tables += fmt::format("{}qos_{}_sl2vl", tables.empty() ? "" : ", ", port_class_prefix(c));
    if (!tables.empty())
      out.push_back({Severity::kWarning, at,
                     fmt::format("level '{}' uses SL {}, which {} maps to VL 15: queries at this "
                                 "level get no path record",
                                 name, sl, tables),
                     "OpenSM drops such answers silently"});
  };
  for (const auto& l : policy.levels) check(l.name, l.sl, l.location);
  for (const auto& r : policy.ulp_rules)
    if (r.ulp_sl) check(r.text, *r.ulp_sl, r.location);
  if (policy.ulp_default_sl && !policy.default_level())
    check("default", *policy.ulp_default_sl, policy.ulp_default_location);
  return out;
}

}  // namespace rdmaqos::policy
