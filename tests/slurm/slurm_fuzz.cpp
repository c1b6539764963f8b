// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Slurm plugin's parsers of untrusted text: plugstack.conf arguments (split at blanks as
// Slurm does), --rdma-qos values, run-env's JSON and the RDMA_QOS_SLURM_SET record a job's user
// can change.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/slurm/job_env.h"
#include "rdma-qos/slurm/site_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> args;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of(" \t\n", start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) args.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  auto parsed = rdmaqos::slurm::parse_site_rules(args);
  rdmaqos::slurm::parse_class_spec(text);
  rdmaqos::slurm::parse_marker(text);
  auto answer = rdmaqos::slurm::parse_run_env_json(text);
  auto lookup = [&](std::string_view) -> std::optional<std::string> { return std::string(text); };
  rdmaqos::slurm::plan_job_env(1, false, answer.values, parsed.rules, lookup);
  return 0;
}
