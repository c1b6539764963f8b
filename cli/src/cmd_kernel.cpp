// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos kernel`: the defaults kernel rdma_cm users get on RoCE ports (configfs), from the
// host configuration (kernel_roce_tos, kernel_roce_mode in rdma-qos.conf).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/kmod-shim/roce_defaults.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace rdmaqos::cli {
namespace {

struct KernelArgs {
  kmod::KernelPaths paths;
  std::string device;
  uint32_t port = 0;
  bool dry_run = false;
  bool json = false;
};

void add_path_options(CLI::App* cmd, KernelArgs& a) {
  cmd->add_option("--sysfs", a.paths.sysfs_infiniband, "RDMA devices in sysfs")
      ->capture_default_str();
  cmd->add_option("--configfs", a.paths.configfs_rdma_cm, "the rdma_cm configfs directory")
      ->capture_default_str();
  cmd->add_flag("--json", a.json, "print JSON");
}

void run_show(const KernelArgs& a) {
  std::string error;
  auto ports = kmod::list_roce_ports(a.paths, &error);
  if (!error.empty()) std::cerr << "rdma-qos kernel show: " << error << "\n";
  nlohmann::json out = nlohmann::json::array();
  if (!a.json) std::cout << fmt::format("{:<16} {:>4} {:>8} {}\n", "device", "port", "tos", "mode");
  for (const auto& p : ports) {
    auto d = kmod::read_port_defaults(a.paths, p);
    if (a.json) {
      out.push_back({{"device", p.device},
                     {"port", p.port},
                     {"default_roce_tos", d.tos ? nlohmann::json(*d.tos) : nlohmann::json()},
                     {"default_roce_mode", d.mode ? nlohmann::json(*d.mode) : nlohmann::json()}});
    } else {
      std::cout << fmt::format("{:<16} {:>4} {:>8} {}\n", p.device, p.port,
                               d.tos ? std::to_string(*d.tos) : "-", d.mode.value_or("-"));
    }
  }
  if (a.json) std::cout << out.dump(2) << "\n";
  if (!a.json && ports.empty()) std::cout << "(no RoCE ports)\n";
  set_exit_code(error.empty() ? 0 : 1);
}

void run_apply(const KernelArgs& a) {
  auto loaded = config::load_host_config();
  if (!loaded.errors.empty()) {
    for (const auto& e : loaded.errors) std::cerr << e.message << "\n";
    std::cerr << "rdma-qos kernel apply: nothing written: fix the configuration first\n";
    set_exit_code(2);
    return;
  }
  kmod::DesiredDefaults desired;
  desired.tos = *config::parse_port_values(loaded.config.text("kernel_roce_tos"), 255);
  desired.sl = *config::parse_port_values(loaded.config.text("kernel_roce_sl"), 15);
  desired.sl2tclass =
      rdmacm::parse_sl2tclass(loaded.config.text("roce_sl2tclass")).value_or(desired.sl2tclass);
  desired.mode = loaded.config.text("kernel_roce_mode");
  auto results = kmod::apply_roce_defaults(
      a.paths, desired, a.device.empty() ? std::nullopt : std::optional(a.device),
      a.port == 0 ? std::nullopt : std::optional(a.port), a.dry_run);
  bool failed = false;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    failed = failed || !r.error.empty();
    if (a.json) {
      out.push_back({{"device", r.port.device},
                     {"port", r.port.port},
                     {"file", r.file},
                     {"before", r.before},
                     {"after", r.after},
                     {"changed", r.changed},
                     {"error", r.error}});
    } else if (!r.error.empty()) {
      std::cerr << "rdma-qos kernel apply: " << r.error << "\n";
    } else {
      std::cout << fmt::format(
          "{} {}:{} {}: {}{}\n", r.changed ? (a.dry_run ? "would set" : "set") : "kept",
          r.port.device, r.port.port, r.file.substr(r.file.rfind('/') + 1), r.after,
          r.changed && !r.before.empty() ? " (was " + r.before + ")" : "");
    }
  }
  if (a.json) std::cout << out.dump(2) << "\n";
  if (!a.json && results.empty())
    std::cout
        << "nothing to do: no RoCE port, or kernel_roce_tos, kernel_roce_sl and kernel_roce_mode "
           "unset\n";
  set_exit_code(failed ? 1 : 0);
}

void setup_kernel(CLI::App& app) {
  auto* kernel = app.add_subcommand("kernel", "defaults of kernel RDMA users on RoCE ports");
  kernel->require_subcommand(1);
  auto args = std::make_shared<KernelArgs>();

  auto* apply = kernel->add_subcommand(
      "apply", "write kernel_roce_tos / kernel_roce_mode from rdma-qos.conf into configfs");
  add_path_options(apply, *args);
  apply->add_option("--dev", args->device, "only this RDMA device");
  apply->add_option("--port", args->port, "only this port")->check(CLI::Range(1, 255));
  apply->add_flag("--dry-run", args->dry_run, "report what would change, write nothing");
  apply->callback([args] { run_apply(*args); });

  auto* show = kernel->add_subcommand("show", "print the current defaults of every RoCE port");
  add_path_options(show, *args);
  show->callback([args] { run_show(*args); });
}

const CommandRegistration kRegistration{"kernel", &setup_kernel};

}  // namespace
}  // namespace rdmaqos::cli
