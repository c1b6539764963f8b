// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Storage for the subcommand registry (see command.h).
#include "command.h"

#include <algorithm>

namespace rdmaqos::cli {
namespace {

// A function-local static: registrations from other files may run before this file's statics.
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

int g_exit_code = 0;

}  // namespace

const std::vector<Command>& commands() {
  auto& r = registry();
  std::sort(r.begin(), r.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  return r;
}

CommandRegistration::CommandRegistration(std::string name, CommandSetup setup) {
  registry().push_back({std::move(name), std::move(setup)});
}

void set_exit_code(int code) {
  g_exit_code = code;
}
int exit_code() {
  return g_exit_code;
}

}  // namespace rdmaqos::cli
