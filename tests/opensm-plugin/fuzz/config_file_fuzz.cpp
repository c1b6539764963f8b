// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: the config file the plugin's options may name (config=FILE: one "key value"
// or "key=value" a line, '#' comments), read through the public parse_options as OpenSM's
// event_plugin_options would name it. The input is the file's content, served from a memfd
// (/proc/self/fd/N), so no path on disk is touched. Inputs naming another config file are
// skipped: the fuzzer must not open arbitrary paths. Every error names the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rdma-qos/opensm-plugin/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("plugin-options", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0) __builtin_trap();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find("config") != std::string_view::npos) return 0;
  if (ftruncate(fd, 0) != 0) __builtin_trap();
  if (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) __builtin_trap();
  auto r = rdmaqos::osmp::parse_options("config=" + path);
  for (const std::string& e : r.errors)
    if (e.rfind(path + ":", 0) != 0) __builtin_trap();
  return 0;
}
