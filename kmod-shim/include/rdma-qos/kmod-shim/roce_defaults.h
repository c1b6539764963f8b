// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Kernel RoCE defaults: the TOS and RoCE mode kernel rdma_cm users (iSER, NFS/RDMA, NVMe-oF,
// RDS, Lustre) get on each RoCE port, kept in the rdma_cm configfs tree
// (<configfs>/rdma_cm/<dev>/ports/<n>/default_roce_tos and default_roce_mode).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/config/port_values.h"

namespace rdmaqos::kmod {

struct KernelPaths {
  std::string sysfs_infiniband = "/sys/class/infiniband";
  std::string configfs_rdma_cm = "/sys/kernel/config/rdma_cm";
};

struct RocePort {
  std::string device;
  uint32_t port = 0;
};

// RoCE ports (link_layer "Ethernet") of every RDMA device, sorted. No RDMA devices is an empty
// list, not an error; a sysfs directory that cannot be read is kTransport, "DIR: reason".
Result<std::vector<RocePort>> list_roce_ports(const KernelPaths& paths);

struct PortDefaults {
  RocePort port;
  std::optional<uint8_t> tos;       // nullopt: the device has no configfs directory yet
  std::optional<std::string> mode;  // "RoCE v2", "IB/RoCE v1"
};

PortDefaults read_port_defaults(const KernelPaths& paths, const RocePort& port);

struct DesiredDefaults {
  config::PortValues tos;  // kernel_roce_tos
  // kernel_roce_sl: a QoS level's SL per port, written as roce_sl2tclass[SL]; an explicit
  // kernel_roce_tos entry covering the port wins over it.
  config::PortValues sl;
  std::array<std::optional<uint8_t>, 16> sl2tclass{};  // roce_sl2tclass
  std::string mode;                                    // "", "v1", "v2" (kernel_roce_mode)
};

// The TOS to write for one port: kernel_roce_tos, else roce_sl2tclass[kernel_roce_sl]; nullopt
// when neither covers the port. kInvalidArgument when the port's SL maps to no traffic class.
Result<std::optional<uint64_t>> desired_tos(const DesiredDefaults& desired, std::string_view device,
                                            uint32_t port);

struct ApplyResult {
  RocePort port;
  std::string file;  // the configfs file concerned
  std::string before, after;
  bool changed = false;
  std::optional<Error> error;  // message "FILE: reason"; nullopt on success
};

// Writes what `desired` asks for on every RoCE port (or only `device` / `port` when given),
// creating the device's configfs directory when needed. Writes nothing that already holds the
// wanted value, so a second run changes nothing. With `dry_run`, only reports.
std::vector<ApplyResult> apply_roce_defaults(const KernelPaths& paths,
                                             const DesiredDefaults& desired,
                                             const std::optional<std::string>& device,
                                             std::optional<uint32_t> port, bool dry_run);

}  // namespace rdmaqos::kmod
