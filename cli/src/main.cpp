// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos: one command for everything a person runs by hand (policy checks, path queries,
// flow labels, kernel defaults ...). Subcommands live in cmd_<name>.cpp.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"

int main(int argc, char** argv) {
  CLI::App app{"rdma-qos: one QoS policy honoured end to end on InfiniBand and RoCE v2 fabrics",
               "rdma-qos"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RDMA_QOS_VERSION);
  for (const auto& command : rdmaqos::cli::commands()) command.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 as CLI11 prints them; every usage error exits 2 (CLI11's own
    // codes are 100 and up), prefixed with the program's name like every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "rdma-qos: " << e.what() << "\nrdma-qos: run with --help for the usage\n";
    return 2;
  } catch (const nlohmann::json::exception& e) {
    // A daemon's reply (or a file) in another form than this command reads, e.g. from another
    // version: say so and exit 2 instead of aborting.
    std::cerr << "rdma-qos: a reply or file is not in the form this command reads: " << e.what()
              << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rdma-qos: " << e.what() << "\n";
    return 2;
  }
  return rdmaqos::cli::exit_code();
}
