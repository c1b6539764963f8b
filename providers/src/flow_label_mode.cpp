// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Flow-label modes: parsing RDMA_QOS_FLOW_LABEL values and choosing a label per mode.
#include "rdma-qos/providers/flow_label_mode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "rdma-qos/providers/entropy.h"

namespace rdmaqos::providers {
namespace {

std::string lower_trimmed(std::string_view text) {
  size_t b = text.find_first_not_of(" \t");
  size_t e = text.find_last_not_of(" \t");
  std::string out = b == std::string_view::npos ? "" : std::string(text.substr(b, e - b + 1));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

rdmaqos::Result<FlowLabelSetting> parse_flow_label_setting(std::string_view text) {
  std::string t = lower_trimmed(text);
  if (t == "rfc" || t.empty()) return FlowLabelSetting{FlowLabelMode::kRfc, 0};
  if (t == "linux") return FlowLabelSetting{FlowLabelMode::kLinux, 0};
  if (t == "spread") return FlowLabelSetting{FlowLabelMode::kSpread, 0};
  if (t == "off") return FlowLabelSetting{FlowLabelMode::kOff, 0};
  auto value = parse_unsigned(t, RDMA_QOS_FLOW_LABEL_MASK);
  if (value && *value != 0)
    return FlowLabelSetting{FlowLabelMode::kFixed, static_cast<uint32_t>(*value)};
  return rdmaqos::make_error(
      rdmaqos::ErrorCode::kInvalidArgument,
      fmt::format("invalid flow label setting '{}': expected rfc, linux, spread, off, or a label "
                  "1..0xfffff (decimal or 0x-hex)",
                  text));
}

std::string to_string(const FlowLabelSetting& s) {
  switch (s.mode) {
    case FlowLabelMode::kRfc: return "rfc";
    case FlowLabelMode::kLinux: return "linux";
    case FlowLabelMode::kSpread: return "spread";
    case FlowLabelMode::kOff: return "off";
    case FlowLabelMode::kFixed: return fmt::format("0x{:05x}", s.fixed_label);
  }
  return "?";
}

std::optional<uint32_t> cm_flow_label(const FlowLabelSetting& s, uint16_t dport, uint16_t sport) {
  switch (s.mode) {
    case FlowLabelMode::kRfc: return rdma_qos_flow_label_from_cm_ports(dport, sport);
    case FlowLabelMode::kLinux: return rdma_qos_flow_label_linux_cm(sport, dport);
    case FlowLabelMode::kSpread: return rdma_qos_flow_label_spread(dport, sport);
    case FlowLabelMode::kOff: return std::nullopt;
    case FlowLabelMode::kFixed: return s.fixed_label;
  }
  return std::nullopt;
}

std::optional<uint32_t> qpn_flow_label(const FlowLabelSetting& s, uint32_t lqpn, uint32_t rqpn) {
  switch (s.mode) {
    case FlowLabelMode::kRfc:
    case FlowLabelMode::kLinux:
    case FlowLabelMode::kSpread: return rdma_qos_flow_label_from_qpns(lqpn, rqpn);
    case FlowLabelMode::kOff: return std::nullopt;
    case FlowLabelMode::kFixed: return s.fixed_label;
  }
  return std::nullopt;
}

}  // namespace rdmaqos::providers
