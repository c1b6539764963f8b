// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos version`: the version, for people and (with --json) for scripts.
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"

namespace rdmaqos::cli::cmd_version {
namespace {

void setup_version(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "print the rdma-qos version");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print JSON");
  cmd->callback([json] {
    if (*json)
      std::cout << nlohmann::json{{"version", RDMA_QOS_VERSION}}.dump() << "\n";
    else
      std::cout << "rdma-qos " << RDMA_QOS_VERSION << "\n";
  });
}

const CommandRegistration kRegistration{"version", &setup_version};

}  // namespace
}  // namespace rdmaqos::cli::cmd_version
