// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos sad explain` and `rdma-qos opensm-plugin explain`: one subcommand shape for both
// front ends of the SA engine, which answer the same "explain" control command.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

namespace rdmaqos::cli {

// Adds `explain` under `parent` with the query options of `rdma-qos path`, --json and
// --timeout; `socket` gives the control socket when the command runs (nullopt: it could not
// tell, and has said why). Exit status: 0 answered, 1 no record, 2 could not ask. The caller
// adds its own options to choose the socket to the returned subcommand.
CLI::App* add_explain_command(CLI::App* parent, const std::string& front,
                              std::function<std::optional<std::string>()> socket);

}  // namespace rdmaqos::cli
