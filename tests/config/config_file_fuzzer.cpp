// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: rdma-qos.conf text is read from disk by every host component; no input may
// crash the parser, and every diagnostic names the file.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rdma-qos/config/host_config.h"

namespace {
std::optional<std::string> no_env(std::string_view) {
  return std::nullopt;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = rdmaqos::config::parse_host_config(text, "fuzz.conf", &no_env);
  for (const auto& d : r.errors)
    if (rdmaqos::format_diagnostic(d).rfind("fuzz.conf:", 0) != 0) abort();
  return 0;
}
