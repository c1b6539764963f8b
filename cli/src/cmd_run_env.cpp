// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos run-env`: the policy's decision for a program's QoS class, written as the HPC
// stacks' own environment variables (UCX_IB_SL, NCCL_IB_TC, NVSHMEM_IB_SL, ...). rdma-qos-run
// runs it before the program: UCX, NCCL, NVSHMEM and other stacks that bypass the preload
// module read these instead. RoCE: the host policy, queried as for a plain-verbs QP;
// InfiniBand: the SA's PathRecord. It warns when a port setting undoes the variables.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "command.h"
#include "port_checks.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/client.h"
#include "sa_open.h"
#include "stack_knobs.h"

namespace rdmaqos::cli::cmd_run_env {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RunEnvArgs {
  std::optional<uint16_t> qos_class;
  std::string link = "auto";
  std::string ca;
  int port = 0;
  std::string policy_file;
  std::optional<uint16_t> dlid;
  std::optional<int> timeout_ms;
  bool override_user = false;
  bool explain = false;
  bool json_out = false;
  std::string sysfs = "/sys/class/infiniband";
};

// Why a decision could not be made; the caller exports nothing. `nothing_to_decide`: not a
// failure but a host without a policy (the default file absent), where the stacks keep their
// own defaults exactly as the preload module leaves rdma_cm connections alone.
struct Failure {
  std::string message;
  bool nothing_to_decide = false;
};

struct ClassInput {
  std::optional<uint16_t> value;
  std::string source;  // "--class", "RDMA_QOS_CLASS", "FILE:LINE"
};

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// The port whose link layer decides RoCE or InfiniBand: --ca/--port, else the first ACTIVE port
// in sysfs (--sysfs, /sys/class/infiniband).
struct PortLink {
  std::string ca;
  int port = 0;
  bool roce = false;
};

// The port run-env decides for (--link auto): kNotFound when there is none.
rdmaqos::Result<PortLink> find_port(const fs::path& root, const std::string& ca, int port) {
  std::error_code ec;
  std::vector<fs::path> devices;
  for (const auto& e : fs::directory_iterator(root, ec)) devices.push_back(e.path());
  std::sort(devices.begin(), devices.end());
  for (const auto& dev : devices) {
    if (!ca.empty() && dev.filename() != ca) continue;
    std::vector<fs::path> ports;
    for (const auto& e : fs::directory_iterator(dev / "ports", ec)) ports.push_back(e.path());
    std::sort(ports.begin(), ports.end());
    for (const auto& p : ports) {
      auto number = parse_unsigned(p.filename().string(), 255);
      if (!number) continue;
      const int n = static_cast<int>(*number);
      if (port != 0 && n != port) continue;
      // An explicitly named port counts whatever its state; otherwise the first active one.
      if (port == 0 && read_line(p / "state").find("ACTIVE") == std::string::npos) continue;
      return PortLink{dev.filename(), n, read_line(p / "link_layer") == "Ethernet"};
    }
  }
  if (!ca.empty())
    return rdmaqos::make_error(ErrorCode::kNotFound,
                               fmt::format("no port {} on RDMA device {}",
                                           port == 0 ? "active" : std::to_string(port), ca));
  return rdmaqos::make_error(ErrorCode::kNotFound,
                             "no active RDMA port (name the fabric with --link roce|ib)");
}

ClassInput class_input(const RunEnvArgs& a, const config::HostConfig& c) {
  if (a.qos_class) return {a.qos_class, "--class"};
  const config::Value& v = c.get("class");
  if (v.text.empty()) return {};
  auto n = c.optional_number("class");
  if (!n) return {};  // refused by the loader, which said so
  return {static_cast<uint16_t>(*n), v.origin};
}

std::string class_text(const ClassInput& in) {
  if (!in.value) return "no QoS class";
  return fmt::format("class {} ({})", *in.value, in.source);
}

std::variant<ClassDecision, Failure> decide_roce_class(const RunEnvArgs& a,
                                                       const config::HostConfig& c,
                                                       const ClassInput& cls) {
  const std::string file = a.policy_file.empty() ? c.text("policy_file") : a.policy_file;
  auto read = config::read_regular_file(file, config::kMaxPolicyFileBytes);
  if (!read) {
    if (read.error().code == ErrorCode::kNotFound && a.policy_file.empty() &&
        c.get("policy_file").source == config::Source::kDefault)
      return Failure{fmt::format("no host policy ({} does not exist)", file), true};
    return Failure{fmt::format("cannot read the policy {}: {}", file, read.error().message)};
  }
  rdmacm::HostPolicy p = rdmacm::load_host_policy(*read, file);
  for (const auto& m : p.messages) std::cerr << "rdma-qos run-env: " << m << "\n";
  if (!p.policy) return Failure{fmt::format("the policy {} has errors", file)};
  auto sl2tclass = rdmacm::parse_sl2tclass(c.text("roce_sl2tclass"));

  // What a plain-verbs QP of the program has on RoCE: no Service-ID, the default partition,
  // and the program's class when it has one. Rules naming a Service-ID never match it.
  policy::PathQuery q;
  q.component_mask = policy::kCompPkey;
  q.pkey = 0xFFFF;
  if (cls.value) {
    q.component_mask |= policy::kCompQosClass;
    q.qos_class = *cls.value;
  }
  auto m = p.policy->match(q);
  if (m.level == nullptr) return Failure{fmt::format("the policy {} gives no level", file)};
  ClassDecision d;
  d.roce = true;
  d.sl = m.level->sl & 0xF;
  if (sl2tclass) d.traffic_class = (*sl2tclass)[d.sl];
  std::string by =
      fmt::format("no rule matches: the default level of the RoCE host policy {}", file);
  if (m.rule) {
    const auto& loc = p.policy->rules()[*m.rule]->location;
    by = fmt::format("rule {} of the RoCE host policy ({}:{}:{})", *m.rule + 1, file, loc.line,
                     loc.column);
  }
  d.qos_class = cls.value;
  d.because = fmt::format("{} -> level {} (SL {}), {}", class_text(cls), m.level->name, d.sl, by);
  return d;
}

std::variant<ClassDecision, Failure> decide_ib_class(const RunEnvArgs& a,
                                                     const config::HostConfig& c,
                                                     const ClassInput& cls, const PortLink& port) {
  sa::ClientOptions o;
  o.port.ca = port.ca;
  o.port.port = port.port;
  o.timeout = std::chrono::milliseconds(a.timeout_ms ? *a.timeout_ms
                                                     : static_cast<int>(c.number("sa_timeout_ms")));
  o.retries = static_cast<int>(c.number("sa_retries"));
  auto lids = config::parse_port_lids(c.text("sa_lid"));  // invalid: reported by the loader
  auto client = open_sa_client(o, lids ? *lids : config::PortValues{});
  if (!client)
    return Failure{fmt::format("cannot open {}:{} for SA queries: {}",
                               port.ca.empty() ? "the first InfiniBand port" : port.ca, port.port,
                               client.error().message)};
  sa::Client& sa_client = **client;
  // The whole wait is bounded, whatever the SA does: timeout x (retries + 1).
  const auto bound = *o.timeout * (o.retries + 1);
  sa_client.set_deadline(std::chrono::steady_clock::now() + bound);

  // One PathRecord for the class: from this port to --dlid, else to itself (a path every SA
  // answers). Rules that name other destinations are the interposer's business, per QP.
  sa::PathQuery q;
  q.get_table = false;
  q.record.slid = sa_client.port().lid;
  q.record.dlid = a.dlid.value_or(sa_client.port().lid);
  q.comp_mask = sa::pr_mask::kSlid | sa::pr_mask::kDlid;
  if (cls.value) {
    q.record.qos_class = *cls.value;
    q.comp_mask |= sa::pr_mask::kQosClass;
  }
  auto paths = sa_client.path_records(q);
  if (!paths) {
    if (paths.error().code == rdmaqos::ErrorCode::kTimeout)
      return Failure{
          fmt::format("no answer from the SA at LID {} in {} attempts of up to {} ms, at most "
                      "{} ms in all (is a subnet manager running?)",
                      sa_client.sa_lid(), o.retries + 1, o.timeout->count(), bound.count())};
    return Failure{fmt::format("the SA (LID {}) refused the PathRecord query: {}",
                               sa_client.sa_lid(), paths.error().message)};
  }
  if (paths->empty())
    return Failure{fmt::format("the SA (LID {}) has no path LID {} -> {}", sa_client.sa_lid(),
                               q.record.slid, q.record.dlid)};
  ClassDecision d;
  d.roce = false;
  d.qos_class = cls.value;
  d.sl = paths->front().sl & 0xF;
  d.because = fmt::format("{} -> SL {} in the SA's PathRecord (SA LID {}, LID {} -> {})",
                          class_text(cls), d.sl, sa_client.sa_lid(), q.record.slid, q.record.dlid);
  return d;
}

const char* action_name(ExportAction a) {
  switch (a) {
    case ExportAction::kSet: return "set";
    case ExportAction::kKeptUserValue: return "kept";
    case ExportAction::kNotDecided: return "not-set";
  }
  return "?";
}

void print_plan(const std::vector<PlannedExport>& plan, const RunEnvArgs& a, const ClassDecision& d,
                const std::vector<std::string>& warnings) {
  if (a.json_out) {
    json vars = json::array();
    for (const auto& p : plan) {
      json v = {{"name", p.name}, {"action", action_name(p.action)}, {"why", p.why}};
      if (p.value) v["value"] = *p.value;
      if (!p.user_value.empty()) v["environment"] = p.user_value;
      vars.push_back(std::move(v));
    }
    json out = {{"link", d.roce ? "RoCE" : "InfiniBand"},
                {"sl", d.sl},
                {"because", d.because},
                {"variables", vars},
                {"warnings", warnings}};
    out["class"] = d.qos_class ? json(*d.qos_class) : json(nullptr);
    if (d.traffic_class) out["traffic_class"] = *d.traffic_class;
    std::cout << out.dump() << "\n";
    return;
  }
  for (const auto& p : plan) {
    if (p.action == ExportAction::kSet) {
      std::cout << p.name << "=" << static_cast<int>(*p.value) << "\n";
      if (a.explain) std::cout << "  # " << p.why << "\n";
    } else if (a.explain) {
      std::cout << "# " << p.name << " " << p.why << "\n";
    }
  }
}

int run_env(const RunEnvArgs& a) {
  auto loaded = config::load_host_config();
  for (const auto& e : loaded.errors)
    std::cerr << "rdma-qos run-env: " << format_diagnostic(e) << "\n";
  const config::HostConfig& c = loaded.config;
  const ClassInput cls = class_input(a, c);

  // --link ib names the port as libibumad does (empty: its first active InfiniBand port), so
  // it also works where only umad sees the device; auto reads the link layer from sysfs.
  PortLink port{a.ca, a.port, a.link == "roce"};
  if (a.link == "auto") {
    auto found = find_port(a.sysfs, a.ca, a.port);
    if (!found) {
      std::cerr << "rdma-qos run-env: " << found.error().message << "\n";
      return 1;
    }
    port = *found;
  }
  auto decided = port.roce ? decide_roce_class(a, c, cls) : decide_ib_class(a, c, cls, port);
  if (const auto* f = std::get_if<Failure>(&decided)) {
    if (f->nothing_to_decide) {
      if (a.json_out)
        std::cout << json{{"variables", json::array()}, {"because", f->message}}.dump() << "\n";
      else if (a.explain)
        std::cout << "# nothing to export: " << f->message << "\n";
      return 0;
    }
    if (a.json_out) std::cout << json{{"error", f->message}}.dump() << "\n";
    std::cerr << "rdma-qos run-env: " << f->message << "; the stacks keep their own defaults\n";
    return 1;
  }
  const ClassDecision& d = std::get<ClassDecision>(decided);
  auto env = [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  // Port settings that undo what the variables say, said once on standard error (and in the
  // JSON): rdma-qos-run passes run-env's standard error on to the user.
  std::vector<std::string> warnings;
  if (auto w = tclass_override_warning(read_tclass_overrides(a.sysfs), a.sysfs, d.traffic_class))
    warnings.push_back(std::move(*w));
  if (!d.roce) {
    if (auto w = ar_sl_warning(d.sl, read_mlx5_ar_sl_masks(), env("UCX_IB_AR_ENABLE")))
      warnings.push_back(std::move(*w));
  }
  for (const auto& w : warnings) std::cerr << "rdma-qos run-env: warning: " << w << "\n";
  print_plan(plan_exports(d, env, a.override_user), a, d, warnings);
  return 0;
}

void setup_run_env(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run-env",
      "print the HPC stacks' QoS variables (UCX_IB_SL, NCCL_IB_TC, NVSHMEM_IB_SL, ...) for a "
      "program's QoS class, as NAME=VALUE lines (rdma-qos-run exports them)");
  auto a = std::make_shared<RunEnvArgs>();
  add_number(*cmd, "--class", a->qos_class,
             "the program's QoS class (default: the class knob, RDMA_QOS_CLASS)")
      ->check(CLI::Range(0, 0xFFF));
  cmd->add_option("--link", a->link,
                  "roce (the host policy), ib (the SA) or auto (the link layer of --ca/--port, "
                  "else of the first active port)")
      ->check(CLI::IsMember({"auto", "roce", "ib"}))
      ->capture_default_str();
  cmd->add_option("--ca", a->ca, "RDMA device whose port decides (default: the first active)");
  add_number(*cmd, "--port", a->port, "port number on --ca (default: the first active)");
  cmd->add_option("--policy", a->policy_file,
                  "RoCE: the host policy file (default: the policy_file knob, RDMA_QOS_POLICY)");
  add_number(*cmd, "--dlid", a->dlid,
             "InfiniBand: ask the SA for the path to this LID (default: this port's own)");
  add_number(*cmd, "--timeout", a->timeout_ms,
             "InfiniBand: one SA attempt in ms (default: sa_timeout_ms); the whole wait is "
             "at most this x (sa_retries + 1)")
      ->check(CLI::Range(1, 60000));
  cmd->add_flag("--override", a->override_user,
                "also replace variables the environment already sets (default: keep them)");
  cmd->add_flag("--explain", a->explain,
                "follow each NAME=VALUE line with '  # why', and list kept and unset variables "
                "as '# ' comments");
  cmd->add_flag("--json", a->json_out, "print JSON");
  cmd->add_option("--sysfs", a->sysfs,
                  "RDMA devices in sysfs: their link layers and mlx5 traffic class overrides")
      ->capture_default_str();
  cmd->footer(
      "Exit status: 0 decided (the lines may be none), 1 no decision (no policy, no SA answer, "
      "no RDMA port; the reason on standard error), 2 usage error.");
  cmd->callback([a] { set_exit_code(run_env(*a)); });
}

const CommandRegistration kRegistration{"run-env", &setup_run_env};

}  // namespace
}  // namespace rdmaqos::cli::cmd_run_env
