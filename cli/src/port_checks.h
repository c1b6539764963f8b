// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a host's RDMA ports do to the stacks' variables whatever the variables say: the mlx5
// traffic class override and, on InfiniBand, the HCA's adaptive-routing SL mask. `rdma-qos
// run-env` turns each into one warning.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmaqos::cli {

// One port's traffic class override, as the mlx5_ib driver of NVIDIA's MLNX_OFED / DOCA-OFED
// shows it in <sysfs>/<device>/tc/<port>/traffic_class (mode 0644): a line "Global
// tclass=N" when one value is set for the whole port, then one "...,tclass=N" line per
// destination rule. The kernel writes the value into every verbs QP of the port that has a
// GRH, over what the program asked for; DEVX QPs never pass through it. Upstream kernels have
// no such file.
struct TclassOverride {
  std::string device;
  int port = 0;
  std::optional<uint8_t> global;
  int rules = 0;
};

// The file's text; nullopt when it overrides nothing (the driver's default, an empty file).
std::optional<TclassOverride> parse_tclass_override(std::string_view text);

// Every port under `sysfs_root` (/sys/class/infiniband) whose file overrides something, sorted
// by device and port.
std::vector<TclassOverride> read_tclass_overrides(const std::filesystem::path& sysfs_root);

// The warning for `overrides`, nullopt when there are none. `policy_tc`: the traffic class the
// class's variables carry, when they carry one.
std::optional<std::string> tclass_override_warning(const std::vector<TclassOverride>& overrides,
                                                   const std::filesystem::path& sysfs_root,
                                                   std::optional<uint8_t> policy_tc);

// An active InfiniBand port's adaptive-routing SLs: bit n set, adaptive routing on SL n (the
// ooo_sl_mask of mlx5's HCA vport context, which UCX reads to choose its SL).
struct ArSlMask {
  std::string device;
  int port = 0;
  uint16_t mask = 0;
};

// The masks of the host's mlx5 ports where the HCA reports one, read with an unprivileged DEVX
// command (mlx5_ar_sl_mask.cpp); empty where nothing can be read: no libmlx5, no DEVX, an HCA
// without the capability, or no active InfiniBand port.
std::vector<ArSlMask> read_mlx5_ar_sl_masks();

// The warning when `sl` is outside the adaptive-routing SLs of ports that have some (a port
// with none loses nothing). `ucx_ar_enable`: UCX_IB_AR_ENABLE as the environment sets it.
std::optional<std::string> ar_sl_warning(uint8_t sl, const std::vector<ArSlMask>& ports,
                                         std::optional<std::string_view> ucx_ar_enable);

}  // namespace rdmaqos::cli
