// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A PlainVerbsSa for tests: each call answered by a function the test sets; unset, the SA cannot
// be reached and nothing is logged.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plain_verbs.h"

namespace rdmaqos::preload {

struct FakePlainVerbsSa final : PlainVerbsSa {
  std::function<rdmaqos::Result<bool>(const PlainVerbsInputs&, sa::Deadline)> on_qos_supported;
  std::function<rdmaqos::Result<std::vector<sa::PathRecord>>(const PlainVerbsInputs&,
                                                             const sa::PathQuery&, sa::Deadline)>
      on_path_query;
  std::function<void(const std::string& key, const std::string& message)> on_log_once;

  rdmaqos::Result<bool> qos_supported(const PlainVerbsInputs& in, sa::Deadline d) override {
    if (!on_qos_supported) return unreachable();
    return on_qos_supported(in, d);
  }
  rdmaqos::Result<std::vector<sa::PathRecord>> path_query(const PlainVerbsInputs& in,
                                                          const sa::PathQuery& q,
                                                          sa::Deadline d) override {
    if (!on_path_query) return unreachable();
    return on_path_query(in, q, d);
  }
  void log_once(const std::string& key, const std::string& message) override {
    if (on_log_once) on_log_once(key, message);
  }

 private:
  static rdmaqos::Error unreachable() {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "no SA client");
  }
};

}  // namespace rdmaqos::preload
