// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm settings of a host configuration (see cm_settings_from in cm_qos.h): the knobs'
// values and bounds come from config's table, never restated here.
#include <string_view>

#include "rdma-qos/config/host_config.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace rdmaqos::rdmacm {
namespace {

// A numeric knob within its table bounds, which `T` holds.
template <typename T>
std::optional<T> optional_knob(const config::HostConfig& config, std::string_view key) {
  auto n = config.optional_number(key);
  if (!n) return std::nullopt;
  return static_cast<T>(*n);
}

}  // namespace

CmSettings cm_settings_from(const config::HostConfig& config) {
  CmSettings s;
  s.qos_class = optional_knob<uint16_t>(config, "class");
  s.tos = optional_knob<uint8_t>(config, "tos");
  s.service_id = optional_knob<uint64_t>(config, "service_id");
  if (auto table = parse_sl2tclass(config.text("roce_sl2tclass"))) s.sl2tclass = *table;
  return s;
}

}  // namespace rdmaqos::rdmacm
