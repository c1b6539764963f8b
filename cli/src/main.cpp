// rdma-qos: one command for everything a person runs by hand (policy checks, path queries,
// flow labels, kernel defaults ...). Subcommands live in cmd_<name>.cpp.
#include <CLI/CLI.hpp>

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
    return app.exit(e);
  }
  return rdmaqos::cli::exit_code();
}
