// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Per-port settings in the host configuration: a comma-separated list of `[DEV[:PORT]=]VALUE`
// entries, e.g. `kernel_roce_tos 0, mlx5_0=104, rxe0:1=32`. The most specific entry wins:
// DEV:PORT over DEV over the bare default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/result.h"

namespace rdmaqos::config {

struct PortValue {
  std::string device;  // empty: every device
  uint32_t port = 0;   // 0: every port of the device
  uint64_t value = 0;
};

struct PortValues {
  std::vector<PortValue> entries;
  // The value for (device, port), or nullopt when no entry covers it.
  std::optional<uint64_t> lookup(std::string_view device, uint32_t port) const;
};

// Parses the list, each value min_value..max_value; an error (kInvalidArgument) says what is
// wrong, naming the entry.
Result<PortValues> parse_port_values(std::string_view text, uint64_t max_value,
                                     uint64_t min_value = 0);

// The sa_lid knob: the SA's LID for each port, `[DEV[:PORT]=]LID`, each a unicast LID
// (1..49151); a port no entry covers queries its SM's LID. A host whose ports are on different
// subnets names each port's.
Result<PortValues> parse_port_lids(std::string_view text);

// The LID `lids` gives (device, port), nullopt when no entry covers it.
std::optional<uint16_t> port_lid_of(const PortValues& lids, std::string_view device, uint32_t port);

}  // namespace rdmaqos::config
