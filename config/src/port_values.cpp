// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Per-port value lists (see port_values.h).
#include "rdma-qos/config/port_values.h"

#include <fmt/format.h>

#include <cctype>

namespace rdmaqos::config {
namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::optional<uint64_t> number(std::string_view t, uint64_t max) {
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  if (t.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : t) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    if (v > max) return std::nullopt;
  }
  return v;
}

bool valid_device_name(std::string_view d) {
  if (d.empty() || d.size() > 63) return false;
  for (char c : d)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

}  // namespace

std::optional<uint64_t> PortValues::lookup(std::string_view device, uint32_t port) const {
  std::optional<uint64_t> any, dev;
  for (const auto& e : entries) {
    if (e.device.empty()) any = e.value;
    if (e.device == device && e.port == 0) dev = e.value;
    if (e.device == device && e.port == port) return e.value;
  }
  return dev ? dev : any;
}

Result<PortValues> parse_port_values(std::string_view text, uint64_t max_value,
                                     uint64_t min_value) {
  PortValues out;
  auto fail = [](std::string message) -> Result<PortValues> {
    return make_error(ErrorCode::kInvalidArgument, std::move(message));
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = trim(
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) {
      if (text.find_first_not_of(" \t") == std::string_view::npos) break;  // empty list
      return fail("empty entry in the list");
    }
    PortValue v;
    std::string_view value_text = item;
    if (size_t eq = item.find('='); eq != std::string_view::npos) {
      std::string_view where = trim(item.substr(0, eq));
      value_text = trim(item.substr(eq + 1));
      std::string_view dev = where;
      if (size_t colon = where.find(':'); colon != std::string_view::npos) {
        dev = where.substr(0, colon);
        auto port = number(where.substr(colon + 1), 255);
        if (!port || *port == 0)
          return fail(fmt::format("'{}': port must be a number 1..255", item));
        v.port = static_cast<uint32_t>(*port);
      }
      if (!valid_device_name(dev))
        return fail(fmt::format("'{}': bad device name '{}'", item, dev));
      v.device = std::string(dev);
    }
    auto n = number(value_text, max_value);
    if (!n || *n < min_value)
      return fail(fmt::format("'{}': value must be a number {}..{}", item, min_value, max_value));
    v.value = *n;
    for (const auto& e : out.entries)
      if (e.device == v.device && e.port == v.port)
        return fail(fmt::format("'{}': a second entry for the same {}", item,
                                v.device.empty() ? "default" : "device/port"));
    out.entries.push_back(v);
  }
  return out;
}

Result<PortValues> parse_port_lids(std::string_view text) {
  return parse_port_values(text, 0xBFFF, 1);
}

std::optional<uint16_t> port_lid_of(const PortValues& lids, std::string_view device,
                                    uint32_t port) {
  auto lid = lids.lookup(device, port);
  if (!lid) return std::nullopt;
  return static_cast<uint16_t>(*lid);
}

}  // namespace rdmaqos::config
