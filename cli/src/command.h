// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Subcommand registry of the `rdma-qos` command: each cmd_<name>.cpp registers a setup
// function that adds its subcommand (options and callback) to the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace rdmaqos::cli {

using CommandSetup = std::function<void(CLI::App& app)>;

struct Command {
  std::string name;
  CommandSetup setup;
};

// Every registered subcommand, sorted by name.
const std::vector<Command>& commands();

// Registers a subcommand at static-initialisation time:
//   static const CommandRegistration kRegistration{"policy", &setup_policy_command};
struct CommandRegistration {
  CommandRegistration(std::string name, CommandSetup setup);
};

// A subcommand's callback reports its exit status here (0 when never called).
void set_exit_code(int code);
int exit_code();

}  // namespace rdmaqos::cli
