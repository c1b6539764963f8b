// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one table of host configuration knobs. Each knob has a key (rdma-qos.conf), an
// environment variable (RDMA_QOS_*), a default, its documentation and a validator, and maybe a
// deprecated older variable name still accepted; the configuration file, the environment and
// `rdma-qos env` are all derived from it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rdma-qos/common/result.h"

namespace rdmaqos::config {

// The bounds of a numeric knob, inclusive.
struct NumberRange {
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
};

// Success when `value` is acceptable; otherwise why not (kInvalidArgument), which the loader
// turns into a diagnostic at the file's line or the variable.
using Validator = std::function<Result<void>(std::string_view value)>;

struct Knob {
  std::string_view key;            // "flow_label"
  std::string_view env;            // "RDMA_QOS_FLOW_LABEL"
  std::string_view default_value;  // as text, parsed by the component that uses it
  std::string_view doc;
  Validator validate;
  // An older name of the variable, still read when `env` is not set (with a warning).
  std::string_view deprecated_env = {};
  // Read from the environment only (by a shell script or a systemd environment file): not a
  // key of rdma-qos.conf, which refuses it.
  bool environment_only = false;
  // Numeric knobs: their bounds, so readers take value, default and bounds from this table
  // (HostConfig::number) and never restate them.
  std::optional<NumberRange> range = {};
};

std::span<const Knob> knobs();
const Knob* find_knob(std::string_view key);

// Reusable validators.
Validator one_of(std::initializer_list<std::string_view> choices);
Validator unsigned_up_to(unsigned long long max);  // decimal or 0x-hex
Validator any_text();

// Where the host configuration file is: $RDMA_QOS_CONFIG, else /etc/rdma/rdma-qos.conf.
inline constexpr std::string_view kConfigEnv = "RDMA_QOS_CONFIG";
inline constexpr std::string_view kDefaultConfigPath = "/etc/rdma/rdma-qos.conf";

}  // namespace rdmaqos::config
