// The knob table (see knobs.h). Add a knob here and it appears in rdma-qos.conf, the
// environment and `rdma-qos env` at once; document it in config/man/rdma-qos.conf.5.md too.
#include "rdma-qos/config/knobs.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <vector>

namespace rdmaqos::config {
namespace {

std::optional<unsigned long long> parse_number(std::string_view t) {
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  if (t.empty()) return std::nullopt;
  unsigned long long v = 0;
  for (char c : t) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c)))
      d = std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    else
      return std::nullopt;
    if (v > (~0ULL - static_cast<unsigned>(d)) / static_cast<unsigned>(base)) return std::nullopt;
    v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
  }
  return v;
}

// The flow-label setting: a mode name or a fixed 20-bit label.
std::optional<std::string> flow_label_value(std::string_view v) {
  for (std::string_view mode : {"rfc", "linux", "spread", "off"})
    if (v == mode) return std::nullopt;
  auto n = parse_number(v);
  if (n && *n >= 1 && *n <= 0xFFFFF) return std::nullopt;
  return fmt::format("'{}' is not rfc, linux, spread, off or a label 1..0xfffff", v);
}

// An optional number: empty means "not set".
Validator optional_unsigned_up_to(unsigned long long max) {
  auto inner = unsigned_up_to(max);
  return [inner](std::string_view v) -> std::optional<std::string> {
    if (v.empty()) return std::nullopt;
    return inner(v);
  };
}

const std::vector<Knob>& table() {
  static const std::vector<Knob> kKnobs = {
      {"policy_file", "RDMA_QOS_POLICY_FILE", "/etc/rdma/qos-policy.conf",
       "QoS policy file in OpenSM's qos-policy.conf syntax, enforced host-side on RoCE",
       any_text()},
      {"partitions_file", "RDMA_QOS_PARTITIONS_FILE", "",
       "OpenSM partitions.conf the policy's pkey and partition groups resolve through", any_text()},
      {"flow_label", "RDMA_QOS_FLOW_LABEL", "rfc",
       "flow label mode for RoCE v2 QPs: rfc, linux, spread, off, or a fixed label (1..0xfffff)",
       &flow_label_value},
      {"sl", "RDMA_QOS_SL", "",
       "service level (0-15) applied to every QP of a plain verbs program; empty: not applied",
       optional_unsigned_up_to(15)},
      {"tclass", "RDMA_QOS_TCLASS", "",
       "traffic class (0-255, DSCP << 2) applied to every RoCE QP of a plain verbs program; "
       "empty: not applied",
       optional_unsigned_up_to(255)},
      {"apply_on_ib", "RDMA_QOS_APPLY_ON_IB", "0",
       "1: the verbs interposer also changes QPs on InfiniBand ports (default: RoCE only)",
       one_of({"0", "1"})},
      {"log_level", "RDMA_QOS_LOG_LEVEL", "warn", "error, warn, info or debug",
       one_of({"error", "warn", "info", "debug"})},
      {"test_record", "RDMA_QOS_TEST_RECORD", "",
       "test hook: append what the verbs interposer passed on to this file (JSON lines)",
       any_text()},
  };
  return kKnobs;
}

}  // namespace

std::span<const Knob> knobs() {
  return table();
}

const Knob* find_knob(std::string_view key) {
  for (const auto& k : table())
    if (k.key == key) return &k;
  return nullptr;
}

Validator one_of(std::initializer_list<std::string_view> choices) {
  std::vector<std::string> c(choices.begin(), choices.end());
  return [c](std::string_view v) -> std::optional<std::string> {
    for (const auto& choice : c)
      if (v == choice) return std::nullopt;
    return fmt::format("'{}' is not one of: {}", v, fmt::join(c, ", "));
  };
}

Validator unsigned_up_to(unsigned long long max) {
  return [max](std::string_view v) -> std::optional<std::string> {
    auto n = parse_number(v);
    if (n && *n <= max) return std::nullopt;
    return fmt::format("'{}' is not a number 0..{} (decimal or 0x-hex)", v, max);
  };
}

Validator any_text() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

}  // namespace rdmaqos::config
