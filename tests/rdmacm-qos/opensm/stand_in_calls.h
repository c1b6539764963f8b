// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the stand-in librdmacm (tests/rdmacm-qos/ib_stub/fake_librdmacm.c) logged: one JSON
// object per call in the file FAKE_RDMACM_LOG names, read back by the ibsim suites.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace rdmaqos::testing {

// Every call logged in `path`, in order; lines that are no JSON are skipped.
inline std::vector<nlohmann::json> stand_in_calls(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(j);
  }
  return out;
}

// The calls of one function ("rdma_set_option", "rdma_get_cm_event"...).
inline std::vector<nlohmann::json> calls_named(const std::vector<nlohmann::json>& calls,
                                               const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& c : calls)
    if (c.value("call", "") == name) out.push_back(c);
  return out;
}

}  // namespace rdmaqos::testing
