// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a job's tasks get: the stacks' variables as `rdma-qos run-env` decides them for the
// job's class, RDMA_QOS_CLASS, and the preload module where the site enables it, each kept
// when the user's environment already sets it (unless the site overwrites).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/slurm/site_rules.h"

namespace rdmaqos::slurm {

struct StackValue {
  std::string name;   // UCX_IB_SL
  std::string value;  // "3"
  std::string why;
};

// run-env's answer. No `error`: `values` holds what it decided (possibly nothing, with
// `because` saying why, e.g. a host without a policy); `error`: no values. The warnings are
// kept either way: a run-env that warned and then failed said both.
struct RunEnvAnswer {
  std::vector<StackValue> values;
  std::string because;
  // Why there is no decision: kMalformed for output that is not run-env's JSON, kTimeout when
  // it gave no answer in time, kNotFound when the program does not exist, kTransport when it
  // could not be run or failed (its own message, or its exit status).
  std::optional<rdmaqos::Error> error;
  std::vector<std::string> warnings;  // run-env's (an mlx5 traffic-class override, ...)
};

// Reads `rdma-qos run-env --json` output. Anything but the documented shape is an error.
RunEnvAnswer parse_run_env_json(std::string_view text);

// Runs `rules.rdma_qos run-env --json --override --class N [--link L] [--policy P]` with a
// clean environment (only PATH and RDMA_QOS_CONFIG): in slurmstepd it runs as root, so nothing
// of the user's may steer it. Bounded by rules.timeout_seconds; the child is killed after.
RunEnvAnswer run_run_env(const SiteRules& rules, uint16_t qos_class);

struct EnvChange {
  std::string name;
  std::string value;       // what the task gets
  bool kept_user = false;  // the user's own value stays; `value` is the policy's, not set
  std::string user_value;
};

// What the plugin set, as NAME=VALUE,NAME=VALUE: later steps of the job (an srun inside a
// batch script) tell its values from the user's own, and `rdma-qos jobs` reads the class.
inline constexpr std::string_view kMarkerVariable = "RDMA_QOS_SLURM_SET";
std::map<std::string, std::string, std::less<>> parse_marker(std::string_view text);

using JobEnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The changes to the job's environment, RDMA_QOS_CLASS first, then the stacks' variables in
// run-env's order, then LD_PRELOAD (the module in front of what the job has), then
// kMarkerVariable with what is set. A value an earlier step set (per the marker) is replaced
// like an unset one. `class_asked`: the
// class is the one the user asked for with --rdma-qos, so RDMA_QOS_CLASS follows it even over a
// value in the user's environment (the option is the later, explicit choice).
std::vector<EnvChange> plan_job_env(uint16_t qos_class, bool class_asked,
                                    const std::vector<StackValue>& values, const SiteRules& rules,
                                    const JobEnvLookup& job_env);

}  // namespace rdmaqos::slurm
