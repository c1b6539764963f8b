// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading a daemon's stats reply (JSON) field by field, where a missing or mistyped field reads
// as empty or zero rather than throwing: the Prometheus exporters of rdma-qos-sad and of the
// OpenSM plugin turn whatever the reply holds into samples. Header-only (nlohmann/json).
#pragma once

#include <nlohmann/json.hpp>

namespace rdmaqos::common {

// j[key] when it is an object, else an empty one (kept alive: callers iterate it).
inline const nlohmann::json& json_object_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : kEmpty;
}

// j[key] when it is a number, else 0.
inline double json_number_field(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

}  // namespace rdmaqos::common
