// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos fabric`: what the fabric's ports hold for QoS (SL2VL, VL arbitration) against what
// opensm.conf and the policy's qos-setup intend: check (read-only), apply (one-shot SMP Sets,
// read back), share (the bandwidth each SL gets). A thin layer over rdmaqos::fabric.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <iostream>

#include "command.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/fabric/apply.h"
#include "rdma-qos/fabric/check.h"
#include "rdma-qos/fabric/reader.h"
#include "rdma-qos/fabric/share.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/policy/opensm_conf.h"

namespace rdmaqos::cli::cmd_fabric {
namespace {

namespace fab = rdmaqos::fabric;
namespace pol = rdmaqos::policy;

constexpr int kExitDifferences = 1;
constexpr int kExitUnread = 2;  // also: a file that cannot be read or parsed
constexpr size_t kMaxInputBytes = size_t{16} << 20;

struct Options {
  std::string policy_path, opensm_conf_path, partitions_path, svg_path;
  bool json = false, quiet = false, dry_run = false, ports = false;
  fab::ReadOptions read;
};

std::optional<std::string> read_input(const std::string& path) {
  auto read = config::read_regular_file(path, kMaxInputBytes);
  if (read) return std::move(read).value();
  std::cerr << fmt::format("rdma-qos: {}: {}\n", path, read.error().message);
  return std::nullopt;
}

void print_diagnostics(const rdmaqos::Diagnostics& ds, const std::string& file) {
  for (const auto& d : ds) std::cerr << rdmaqos::format_diagnostic(d, file) << "\n";
}

// opensm.conf (OpenSM's defaults without one), the policy (none without --policy) and the
// partition names its port groups may select by (none without a partitions file).
struct Intent {
  pol::QosConfig conf;
  std::optional<pol::Policy> policy;
  std::optional<fab::PartitionKeys> partitions;
  std::string routing_engine;  // the first of opensm.conf's routing_engine; empty: minhop
};

// The partitions file as rdma-qos-sad reads it; only the names and P_Keys matter here (the
// ports are found by their P_Key tables), so members resolve against no fabric.
bool load_partitions(const std::string& path, Intent& in) {
  auto t = read_input(path);
  if (!t) return false;
  auto parsed = pol::parse_partitions(*t, pol::Fabric{});
  print_diagnostics(parsed.diagnostics, path);
  if (rdmaqos::has_errors(parsed.diagnostics)) return false;
  in.partitions.emplace();
  for (const auto& p : parsed.partitions) in.partitions->emplace(p.name, p.pkey);
  return true;
}

std::optional<Intent> load_intent(const Options& o) {
  Intent in;
  std::string conf_text;
  if (!o.opensm_conf_path.empty()) {
    auto t = read_input(o.opensm_conf_path);
    if (!t) return std::nullopt;
    conf_text = std::move(*t);
  }
  auto conf = pol::parse_opensm_conf(conf_text);
  print_diagnostics(conf.diagnostics, o.opensm_conf_path);
  if (rdmaqos::has_errors(conf.diagnostics)) return std::nullopt;
  in.conf = conf.config;
  if (!conf.sm.routing_engines.empty()) in.routing_engine = conf.sm.routing_engines.front();
  // As rdma-qos-sad: without --partitions, opensm.conf's partition_config_file when it exists.
  std::string partitions_path = o.partitions_path;
  if (partitions_path.empty() && conf.sm.partition_config_file &&
      access(conf.sm.partition_config_file->c_str(), F_OK) == 0)
    partitions_path = *conf.sm.partition_config_file;
  if (!partitions_path.empty() && !load_partitions(partitions_path, in)) return std::nullopt;
  if (!o.policy_path.empty()) {
    auto t = read_input(o.policy_path);
    if (!t) return std::nullopt;
    auto parsed = pol::parse_policy(*t);
    print_diagnostics(parsed.diagnostics, o.policy_path);
    if (!parsed.ok()) return std::nullopt;
    in.policy = std::move(parsed.policy);
  }
  return in;
}

bool has_setup(const pol::Policy& p) {
  return !p.setup.sl2vl_scopes.empty() || !p.setup.vlarb_scopes.empty();
}

fab::Planner make_planner(const Intent& in, uint64_t sm_port_guid) {
  std::optional<fab::SetupScopes> scopes;
  const bool engine_keeps_tables = pol::routing_engine_assigns_sls(in.routing_engine);
  if (in.policy && engine_keeps_tables && has_setup(*in.policy)) {
    // As the OpenSM plugin: no qos-setup table under an engine whose SLs are its layers.
    std::cerr << "rdma-qos: opensm.conf routes with " << in.routing_engine
              << ", which assigns path SLs: the policy's qos-setup is not applied under it "
                 "(OpenSM's own SL2VL and VLArb tables keep its layers apart); the fabric is "
                 "checked against OpenSM's tables\n";
  }
  if (in.policy && !engine_keeps_tables) {
    scopes.emplace(*in.policy, sm_port_guid, in.partitions);
    print_diagnostics(scopes->diagnostics(), "policy");
  }
  return fab::Planner(in.conf, std::move(scopes));
}

// P_Key tables are read only when `in`'s qos-setup names a pkey group, or a partition group
// whose names the partitions resolve: most policies have none, and a fabric has many of them.
std::optional<fab::FabricTables> read_tables(Options o, const Intent* in = nullptr) {
  o.read.pkeys = in != nullptr && in->policy &&
                 (fab::scopes_need_pkeys(*in->policy) ||
                  (in->partitions && fab::scopes_need_partitions(*in->policy)));
  if (!o.quiet)
    o.read.progress = [](const std::string& s) { std::cerr << "rdma-qos: " << s << "\n"; };
  auto r = fab::read_fabric(o.read);
  if (!r) {
    std::cerr << "rdma-qos: " << r.error().message << "\n";
    return std::nullopt;
  }
  return std::move(r).value();
}

fab::CheckReport run_check(const fab::FabricTables& t, const Intent& in) {
  const fab::Planner planner = make_planner(in, t.sm_port_guid);
  return fab::check_fabric(t, planner,
                           in.policy ? fab::policy_level_sls(*in.policy)
                                     : std::vector<std::pair<std::string, uint8_t>>{});
}

void print_report(const fab::CheckReport& r, bool json) {
  if (json) {
    std::cout << fab::to_json(r).dump(2) << "\n";
    return;
  }
  for (const auto& line : fab::to_lines(r)) std::cout << line << "\n";
}

int check(const Options& o) {
  auto in = load_intent(o);
  if (!in) return kExitUnread;
  auto tables = read_tables(o, &*in);
  if (!tables) return kExitUnread;
  const auto report = run_check(*tables, *in);
  if (o.ports && o.json) {
    auto j = fab::to_json(report);
    j["port_info"] = fab::ports_json(*tables);
    std::cout << j.dump(2) << "\n";
    return report.exit_code();
  }
  if (o.ports)
    for (const auto& line : fab::ports_lines(*tables)) std::cout << line << "\n";
  print_report(report, o.json);
  return report.exit_code();
}

int apply(const Options& o) {
  auto in = load_intent(o);
  if (!in) return kExitUnread;
  auto tables = read_tables(o, &*in);
  if (!tables) return kExitUnread;
  const auto sets = fab::plan_sets(*tables, make_planner(*in, tables->sm_port_guid));
  if (o.dry_run) {
    for (const auto& s : sets) std::cout << "would set " << s.what << "\n";
    std::cout << sets.size() << " table(s) to write\n";
    return sets.empty() ? 0 : kExitDifferences;
  }
  Options quiet_read = o;
  if (!o.quiet) {
    quiet_read.read.progress = [](const std::string& s) { std::cerr << "rdma-qos: " << s << "\n"; };
    std::cerr << fmt::format("rdma-qos: writing {} table(s)\n", sets.size());
  }
  const auto written = fab::send_sets(sets, quiet_read.read);
  for (const auto& f : written.failed) std::cerr << "rdma-qos: not acknowledged: " << f << "\n";
  // Read back: what the ports hold now is the result, whatever the Sets said.
  fab::FabricTables after = *tables;
  after.unread.clear();
  fab::read_tables(after, quiet_read.read, true);
  const auto report = run_check(after, *in);
  if (!o.json && !o.quiet)
    std::cerr << fmt::format("rdma-qos: wrote {} table(s); read back:\n", written.written);
  print_report(report, o.json);
  return report.exit_code();
}

int share(const Options& o) {
  auto tables = read_tables(o);
  if (!tables) return kExitUnread;
  const auto view = fab::share_view(*tables);
  if (o.json) {
    std::cout << fab::to_json(view).dump(2) << "\n";
  } else {
    for (const auto& line : fab::to_lines(view)) std::cout << line << "\n";
  }
  if (!o.svg_path.empty()) {
    auto err = fab::write_share_svg(view, o.svg_path);
    if (!err.empty()) {
      std::cerr << "rdma-qos: " << err << "\n";
      return kExitUnread;
    }
  }
  return tables->unread.empty() ? 0 : kExitUnread;
}

void add_port_options(CLI::App* cmd, Options& o) {
  cmd->add_option("--ca", o.read.ca, "local CA to send SMPs from (default: the first)");
  add_number(*cmd, "--port", o.read.port, "port of the CA (default: the first active)");
  add_number(*cmd, "--timeout", o.read.timeout_ms,
             "milliseconds to wait for one SMP (default 1000)");
  add_number(*cmd, "--window", o.read.window, "SMPs in flight at once (default 16)")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("-q,--quiet", o.quiet, "no progress lines on standard error");
  cmd->add_flag("--json", o.json, "print JSON");
}

void add_intent_options(CLI::App* cmd, Options& o) {
  cmd->add_option("--policy", o.policy_path,
                  "QoS policy (OpenSM qos-policy.conf syntax) whose qos-setup section applies");
  cmd->add_option("--opensm-conf", o.opensm_conf_path,
                  "opensm.conf whose qos_* options give each port class its tables "
                  "(default: OpenSM's defaults)");
  cmd->add_option("--partitions", o.partitions_path,
                  "partitions (OpenSM partitions.conf) naming the P_Keys of the policy's "
                  "partition groups (default: opensm.conf's partition_config_file)");
}

void setup_fabric_command(CLI::App& app) {
  auto* fabric = app.add_subcommand(
      "fabric", "the QoS tables (SL2VL, VL arbitration) the fabric's ports hold, over SMPs");
  fabric->require_subcommand(1);
  auto o = std::make_shared<Options>();

  auto* c = fabric->add_subcommand(
      "check",
      "read every port's tables and compare them with opensm.conf and the policy's qos-setup "
      "(exit 0 clean, 1 differences, 2 could not read)");
  add_intent_options(c, *o);
  add_port_options(c, *o);
  c->add_flag("--ports", o->ports,
              "also list what each port reports: LID, LMC, VLCap, OperVLs, VL high limit, "
              "VLArb capabilities (JSON: port_info)");
  c->callback([o] { set_exit_code(check(*o)); });

  auto* a = fabric->add_subcommand(
      "apply", "write the intended tables where they differ (SMP Set), then read back and check");
  add_intent_options(a, *o);
  add_port_options(a, *o);
  a->add_flag("-n,--dry-run", o->dry_run, "list the tables that would be written; write nothing");
  a->callback([o] { set_exit_code(apply(*o)); });

  auto* s = fabric->add_subcommand(
      "share", "the bandwidth share of each SL per port class, from the tables actually read");
  add_port_options(s, *o);
  s->add_option("--svg", o->svg_path, "also draw the shares into this SVG file (needs gnuplot)");
  s->callback([o] { set_exit_code(share(*o)); });
}

const CommandRegistration kRegistration{"fabric", &setup_fabric_command};

}  // namespace
}  // namespace rdmaqos::cli::cmd_fabric
