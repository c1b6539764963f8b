// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: the fabric model JSON rdma-qos-sad reads from its re-discovery child
// (discovery_from_json_text). The child runs on the fabric, so the line carries whatever the
// nodes answered. Nothing may crash; a model read is written back and read again to the same
// line, and the line writer agrees with the JSON tree.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdma-qos/sa-responder/discovery.h"
#include "rdma-qos/sa-responder/discovery_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace sad = rdmaqos::sad;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<sad::Discovery> found = sad::discovery_from_json_text(text);
  if (!found) return 0;
  (void)sad::replacement_refused(*found);
  const std::string line = sad::fabric_json_line(*found);
  if (sad::fabric_json(*found).dump() != line) __builtin_trap();
  std::optional<sad::Discovery> again = sad::discovery_from_json_text(line);
  if (!again || sad::fabric_json_line(*again) != line) __builtin_trap();
  return 0;
}
