// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The HPC stacks' own QoS variables (UCX, NCCL, NVSHMEM, UCC, libfabric's psm3) that
// `rdma-qos run-env` fills in from a policy decision, as one table, and the plan of what to
// export given what the environment holds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rdmaqos::cli {

// What a knob carries: the service level (on RoCE the Ethernet priority), or the traffic class
// byte (DSCP << 2 | ECN) that the stack copies into the address vector's grh.traffic_class or
// a DEVX QP's tclass/dscp fields.
enum class KnobQuantity { kSl, kTrafficClass };

struct StackKnob {
  std::string_view name;   // "NCCL_IB_FIFO_TC"
  std::string_view stack;  // "NCCL"
  // The "why" of each line starts "<stack>'s <carries>": "traffic class byte of its FIFO
  // (control) messages".
  std::string_view carries;
  KnobQuantity quantity;
  std::string_view stock;  // what the stack does when the variable is unset
};

std::span<const StackKnob> stack_knobs();

// What the policy decided for the program's class.
struct ClassDecision {
  bool roce = true;
  std::optional<uint16_t> qos_class;
  uint8_t sl = 0;
  // RoCE: the traffic class roce_sl2tclass gives the level's SL; nullopt: none mapped.
  std::optional<uint8_t> traffic_class;
  std::string because;  // "class 5 (RDMA_QOS_CLASS): level GOLD (SL 6), rule 1 at f:3:5"
};

enum class ExportAction { kSet, kKeptUserValue, kNotDecided };

struct PlannedExport {
  std::string name;
  std::optional<uint8_t> value;  // the policy's value (nullopt: nothing decided)
  ExportAction action = ExportAction::kSet;
  std::string user_value;  // kKeptUserValue, or kSet over a user value (override)
  std::string why;
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// One entry per knob of the table, in its order. A variable the environment already sets
// (non-empty) is kept unless `override_user`.
std::vector<PlannedExport> plan_exports(const ClassDecision& decision, const EnvLookup& env,
                                        bool override_user);

}  // namespace rdmaqos::cli
