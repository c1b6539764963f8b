// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos kernel`: the defaults kernel rdma_cm users get on RoCE ports (configfs), from the
// host configuration (kernel_roce_tos, kernel_roce_mode in rdma-qos.conf); and the counters of
// rdma-qos-lsd, the responder to the kernel's path queries, through its control socket.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"
#include "control_reply.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/kmod-shim/roce_defaults.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::cli::cmd_kernel {
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
  auto listed = kmod::list_roce_ports(a.paths);
  const bool listed_ok = listed.ok();
  if (!listed_ok) std::cerr << "rdma-qos kernel show: " << listed.error().message << "\n";
  const std::vector<kmod::RocePort> ports =
      listed_ok ? std::move(listed).value() : std::vector<kmod::RocePort>{};
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
  set_exit_code(listed_ok ? 0 : 1);
}

void run_apply(const KernelArgs& a) {
  auto loaded = config::load_host_config();
  if (!loaded.errors.empty()) {
    for (const auto& e : loaded.errors) std::cerr << format_diagnostic(e) << "\n";
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
    failed = failed || r.error.has_value();
    if (a.json) {
      out.push_back({{"device", r.port.device},
                     {"port", r.port.port},
                     {"file", r.file},
                     {"before", r.before},
                     {"after", r.after},
                     {"changed", r.changed},
                     {"error", r.error ? r.error->message : std::string()}});
    } else if (r.error) {
      std::cerr << "rdma-qos kernel apply: " << r.error->message << "\n";
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

struct StatsArgs {
  std::string socket = "/run/rdma-qos/lsd.sock";
  std::string format = "text";
  bool json = false;
  double timeout = 10;
};

void print_lsd_stats(const nlohmann::json& s) {
  // A part of the reply, or an empty object; copies, so each loop below owns what it walks.
  auto part = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_object() ? j[key] : nlohmann::json::object();
  };
  const nlohmann::json reloads = part(s, "reloads");
  const nlohmann::json requests = part(s, "requests");
  const nlohmann::json answers = part(s, "answers");
  const nlohmann::json f_err = part(answers, "f_err");
  const nlohmann::json by_sl = part(s, "paths_by_sl");
  const nlohmann::json latency = part(s, "latency");
  std::cout << fmt::format("rdma-qos-lsd up {} s, {} reloads ({} failed)\n",
                           s.value("uptime_seconds", 0), reloads.value("ok", 0),
                           reloads.value("failed", 0));
  std::cout << "requests by kind:\n";
  for (const auto& [k, v] : requests.items())
    std::cout << fmt::format("  {:<24} {:>12}\n", k, v.get<uint64_t>());
  std::cout << fmt::format("answers:\n  {:<24} {:>12}\n", "path", answers.value("path", 0));
  for (const auto& [k, v] : f_err.items())
    std::cout << fmt::format("  {:<24} {:>12}\n", "F_ERR " + k, v.get<uint64_t>());
  if (!by_sl.empty()) {
    std::cout << "paths by SL:\n";
    for (const auto& [k, v] : by_sl.items())
      std::cout << fmt::format("  SL {:<21} {:>12}\n", k, v.get<uint64_t>());
  }
  const uint64_t count = latency.value("count", uint64_t{0});
  if (count > 0)
    std::cout << fmt::format("answer latency: {} answers, mean {:.3f} ms\n", count,
                             latency.value("sum_seconds", 0.0) * 1e3 / static_cast<double>(count));
  const nlohmann::json paths = part(s, "path_service");
  if (paths.empty()) return;
  const nlohmann::json connections = part(paths, "connections");
  const nlohmann::json path_answers = part(paths, "answers");
  const nlohmann::json sa_requests = part(paths, "sa_requests");
  const nlohmann::json questions = part(paths, "questions");
  const nlohmann::json failed = part(path_answers, "failed");
  uint64_t sent = 0;
  for (const auto& [k, v] : sa_requests.items()) sent += v.get<uint64_t>();
  std::cout << fmt::format("node path service: {} connections open ({} refused)\n",
                           connections.value("open", 0), connections.value("refused", 0));
  for (const auto& [k, v] : questions.items())
    std::cout << fmt::format("  {:<24} {:>12}\n", "questions " + k, v.get<uint64_t>());
  std::cout << fmt::format("  {:<24} {:>12}\n", "answered", path_answers.value("answered", 0));
  for (const auto& [k, v] : failed.items())
    if (v.get<uint64_t>() > 0)
      std::cout << fmt::format("  {:<24} {:>12}\n", "failed " + k, v.get<uint64_t>());
  std::cout << fmt::format("  {:<24} {:>12}\n  {:<24} {:>12}\n  {:<24} {:>12}\n", "cache hits",
                           paths.value("cache_hits", 0), "joined in flight",
                           paths.value("joined", 0), "SA requests sent", sent);
}

void run_stats(const StatsArgs& a) {
  auto reply = sad::control_call(a.socket, {{"command", "stats"}},
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  if (!reply) {
    std::cerr << fmt::format("rdma-qos kernel stats: {}\n", reply.error().message);
    set_exit_code(2);
    return;
  }
  const nlohmann::json& r = *reply;
  if (!r.value("ok", false) || !r.contains("stats")) {
    std::cerr << "rdma-qos kernel stats: " << r.value("message", "the daemon refused") << "\n";
    set_exit_code(1);
    return;
  }
  if (a.json || a.format == "json") {
    std::cout << r["stats"].dump(2) << "\n";
  } else if (a.format == "prometheus") {
    if (!print_prometheus(r["stats"], "rdma-qos kernel stats")) {
      set_exit_code(1);
      return;
    }
  } else {
    print_lsd_stats(r["stats"]);
  }
  set_exit_code(0);
}

void setup_kernel(CLI::App& app) {
  auto* kernel = app.add_subcommand(
      "kernel", "defaults of kernel RDMA users on RoCE ports; rdma-qos-lsd's counters");
  kernel->require_subcommand(1);
  auto args = std::make_shared<KernelArgs>();

  auto* apply = kernel->add_subcommand(
      "apply", "write kernel_roce_tos / kernel_roce_mode from rdma-qos.conf into configfs");
  add_path_options(apply, *args);
  apply->add_option("--dev", args->device, "only this RDMA device");
  add_number(*apply, "--port", args->port, "only this port")->check(CLI::Range(1, 255));
  apply->add_flag("--dry-run", args->dry_run, "report what would change, write nothing");
  apply->callback([args] { run_apply(*args); });

  auto* show = kernel->add_subcommand("show", "print the current defaults of every RoCE port");
  add_path_options(show, *args);
  show->callback([args] { run_show(*args); });

  auto stats_args = std::make_shared<StatsArgs>();
  auto* stats = kernel->add_subcommand(
      "stats", "counters of rdma-qos-lsd: requests, answers, paths per SL, latency");
  stats->add_option("--socket", stats_args->socket, "rdma-qos-lsd's control socket")
      ->capture_default_str();
  stats
      ->add_option("--format", stats_args->format,
                   "text, json (as --json) or prometheus (the text exposition format, for "
                   "node-exporter's textfile collector)")
      ->check(CLI::IsMember({"text", "json", "prometheus"}))
      ->capture_default_str();
  stats->add_flag("--json", stats_args->json, "print the daemon's JSON counters");
  stats->add_option("--timeout", stats_args->timeout, "seconds to wait for the reply")
      ->capture_default_str();
  stats->callback([stats_args] { run_stats(*stats_args); });
}

const CommandRegistration kRegistration{"kernel", &setup_kernel};

}  // namespace
}  // namespace rdmaqos::cli::cmd_kernel
