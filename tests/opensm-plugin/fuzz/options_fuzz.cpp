// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: the plugin's options string (OpenSM's event_plugin_options) never crashes the
// parser. Inputs naming a config file are skipped: the fuzzer must not open arbitrary paths.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdma-qos/opensm-plugin/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at + 6 <= text.size(); ++at) {
    std::string_view word = text.substr(at, 6);
    bool config = true;
    for (size_t i = 0; i < 6; ++i) config = config && (word[i] | 0x20) == "config"[i];
    if (config) return 0;
  }
  rdmaqos::osmp::parse_options(text);
  return 0;
}
