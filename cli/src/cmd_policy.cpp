// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos policy`: check a QoS policy file, explain which rule a query matches and why, and
// dump what the engine understood. A thin layer over rdmaqos::policy.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <tuple>

#include "command.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/opensm_compat.h"
#include "rdma-qos/policy/opensm_conf.h"

namespace rdmaqos::cli::cmd_policy {
namespace {

namespace pol = rdmaqos::policy;
using nlohmann::json;

// rdma-qos's exit statuses: 0 clean, 1 a finding (errors in a file, warnings with --strict),
// 2 a usage error or a file that cannot be read.
constexpr int kExitClean = 0;
constexpr int kExitFinding = 1;
constexpr int kExitUsage = 2;

// A file named on the command line: a regular file only, so a FIFO or device never hangs the
// command (rdma-qos.conf(5)'s rule for the files the preload reads); net files of the largest
// fabrics are a few MiB, far below the cap. The reason goes to stderr.
constexpr size_t kMaxInputBytes = size_t{256} << 20;
std::optional<std::string> read_file(const std::string& path) {
  auto read = config::read_regular_file(path, kMaxInputBytes);
  if (read) return std::move(read).value();
  std::cerr << fmt::format("rdma-qos: {}: {}\n", path, read.error().message);
  return std::nullopt;
}

struct Inputs {
  std::string file;
  std::string fabric_file;
  std::string partitions_file;
  std::string opensm_conf_file;
  bool for_opensm = false;  // warn about what OpenSM's own parser rejects
};

// The fabric from --fabric / --partitions, or nullopt with the problems printed.
struct Loaded {
  // Every diagnostic of every file, with the file it is about, in the order found.
  std::vector<std::pair<rdmaqos::Diagnostic, std::string>> diagnostics;
  std::optional<pol::Fabric> fabric;
  pol::CompileResult compiled;
  std::string text;
  bool io_error = false;
  bool input_errors = false;  // errors in the fabric or partitions file
};

// Reads and compiles; diagnostics go to stderr unless `quiet` (--json reports them itself).
Loaded load(const Inputs& in, bool quiet = false) {
  Loaded out;
  auto print = [&out, quiet](const rdmaqos::Diagnostics& ds, const std::string& file) {
    for (const auto& d : ds) {
      out.diagnostics.emplace_back(d, file);
      if (!quiet) std::cerr << rdmaqos::format_diagnostic(d, file) << "\n";
    }
  };
  if (!in.fabric_file.empty() || !in.partitions_file.empty()) {
    pol::Fabric fabric;
    if (!in.fabric_file.empty()) {
      auto text = read_file(in.fabric_file);
      if (!text) {
        std::cerr << fmt::format("rdma-qos: cannot read '{}'\n", in.fabric_file);
        out.io_error = true;
        return out;
      }
      pol::FabricResult fr = pol::parse_net_file(*text);
      print(fr.diagnostics, in.fabric_file);
      out.input_errors |= rdmaqos::has_errors(fr.diagnostics);
      fabric = std::move(fr.fabric);
    }
    if (!in.partitions_file.empty()) {
      auto text = read_file(in.partitions_file);
      if (!text) {
        std::cerr << fmt::format("rdma-qos: cannot read '{}'\n", in.partitions_file);
        out.io_error = true;
        return out;
      }
      pol::PartitionsResult pr = pol::parse_partitions(*text, fabric);
      print(pr.diagnostics, in.partitions_file);
      out.input_errors |= rdmaqos::has_errors(pr.diagnostics);
      fabric.partitions = std::move(pr.partitions);
    }
    out.fabric = std::move(fabric);
  }
  auto text = read_file(in.file);
  if (!text) {
    std::cerr << fmt::format("rdma-qos: cannot read '{}'\n", in.file);
    out.io_error = true;
    return out;
  }
  out.text = *text;
  out.compiled = pol::load_policy(out.text, out.fabric ? &*out.fabric : nullptr);
  if (!in.opensm_conf_file.empty() && out.compiled.policy) {
    auto conf = read_file(in.opensm_conf_file);
    if (!conf) {
      std::cerr << fmt::format("rdma-qos: cannot read '{}'\n", in.opensm_conf_file);
      out.io_error = true;
      return out;
    }
    pol::OpenSmConfResult cr = pol::parse_opensm_conf(*conf);
    print(cr.diagnostics, in.opensm_conf_file);
    out.input_errors |= rdmaqos::has_errors(cr.diagnostics);
    for (auto& d : pol::check_level_sls(out.compiled.policy->policy(), cr.config))
      out.compiled.diagnostics.push_back(std::move(d));
  }
  if ((in.for_opensm || !in.opensm_conf_file.empty()) && out.compiled.policy) {
    auto compat = pol::opensm_compatibility(out.compiled.policy->policy());
    out.compiled.diagnostics.insert(out.compiled.diagnostics.end(), compat.begin(), compat.end());
    std::stable_sort(out.compiled.diagnostics.begin(), out.compiled.diagnostics.end(),
                     [](const rdmaqos::Diagnostic& a, const rdmaqos::Diagnostic& b) {
                       return std::tie(a.location.line, a.location.column) <
                              std::tie(b.location.line, b.location.column);
                     });
  }
  print(out.compiled.diagnostics, in.file);
  return out;
}

void add_inputs(CLI::App* cmd, Inputs& in) {
  cmd->add_option("FILE", in.file, "QoS policy file (OpenSM qos-policy.conf syntax)")->required();
  cmd->add_option("--fabric", in.fabric_file,
                  "topology in ibnetdiscover / ibsim net-file format: enables the checks that "
                  "need the fabric (port numbers, node descriptions, partitions)");
  cmd->add_option("--partitions", in.partitions_file,
                  "partitions file (OpenSM partitions.conf syntax) for pkey, partition and "
                  "ipoib rules");
}

// The exit status of a load that stopped the command: 2 unreadable, 1 errors in a file.
int load_failure(const Loaded& l) {
  return l.io_error ? kExitUsage : kExitFinding;
}

json diagnostics_json(const Loaded& l) {
  json a = json::array();
  for (const auto& [d, file] : l.diagnostics) {
    json j{{"file", file},
           {"line", d.location.line},
           {"column", d.location.column},
           {"severity", d.severity == rdmaqos::Severity::kError ? "error" : "warning"},
           {"message", d.message}};
    if (!d.hint.empty()) j["hint"] = d.hint;
    a.push_back(std::move(j));
  }
  return a;
}

// ---- check ----------------------------------------------------------------------------------

void setup_check(CLI::App& policy) {
  auto* cmd = policy.add_subcommand(
      "check",
      "validate a policy file: exit 0 clean, 1 errors (or warnings with --strict), 2 a file "
      "that cannot be read");
  auto in = std::make_shared<Inputs>();
  auto strict = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  add_inputs(cmd, *in);
  cmd->add_option("--opensm-conf", in->opensm_conf_file,
                  "opensm.conf whose SL2VL tables are checked against the levels' SLs (implies "
                  "--opensm)");
  cmd->add_flag("--opensm", in->for_opensm,
                "the file is for OpenSM's own parser (-Y, qos_policy_file): warn about the "
                "rdma-qos extensions it rejects (tclass)");
  cmd->add_flag("--strict", *strict, "exit 1 when there are warnings");
  cmd->add_flag("--json", *as_json, "print the result and every diagnostic as JSON");
  cmd->callback([in, strict, as_json] {
    Loaded l = load(*in, *as_json);
    int status = kExitClean;
    if (l.io_error)
      status = kExitUsage;
    else if (l.input_errors || !l.compiled.policy)
      status = kExitFinding;
    else if (*strict && rdmaqos::has_warnings(l.compiled.diagnostics))
      status = kExitFinding;
    if (*as_json) {
      size_t errors = 0;
      for (const auto& [d, file] : l.diagnostics) errors += d.severity == rdmaqos::Severity::kError;
      std::cout << json{{"file", in->file},
                        {"readable", !l.io_error},
                        {"valid", !l.io_error && !l.input_errors && l.compiled.policy != nullptr},
                        {"errors", errors},
                        {"warnings", l.diagnostics.size() - errors},
                        {"diagnostics", diagnostics_json(l)}}
                       .dump(2)
                << "\n";
    }
    set_exit_code(status);
  });
}

// ---- explain --------------------------------------------------------------------------------

struct ExplainArgs {
  Inputs in;
  std::string service_id, qos_class, pkey, tclass, src, dst;
  bool json = false;
};

// A port by GUID, or by node description ("desc" or "desc/P<n>") in the fabric.
std::optional<std::pair<uint64_t, pol::NodeType>> endpoint(const std::string& s,
                                                           const pol::Fabric* fabric) {
  if (auto g = parse_unsigned(s)) {
    const pol::FabricNode* n = fabric ? fabric->node_of_port(*g) : nullptr;
    return std::make_pair(*g, n ? n->type : pol::NodeType::kCa);
  }
  if (!fabric) return std::nullopt;
  std::string desc = s;
  int port = 0;
  size_t slash = s.rfind('/');
  if (slash != std::string::npos && slash + 1 < s.size() &&
      (s[slash + 1] == 'P' || s[slash + 1] == 'p')) {
    if (auto p = parse_unsigned(s.substr(slash + 2))) {
      desc = s.substr(0, slash);
      port = static_cast<int>(*p);
    }
  }
  for (const auto& n : fabric->nodes) {
    if (n.description != desc) continue;
    for (const auto& [num, guid] : n.port_guids)
      if (port == 0 || num == port || n.type == pol::NodeType::kSwitch)
        return std::make_pair(guid, n.type);
  }
  return std::nullopt;
}

json level_json(const pol::Level& l) {
  json j{{"name", l.name}, {"sl", l.sl}};
  if (l.mtu_limit) j["mtu_limit"] = *l.mtu_limit;
  if (l.rate_limit) j["rate_limit"] = *l.rate_limit;
  if (l.packet_life) j["packet_life"] = *l.packet_life;
  if (!l.pkeys.empty()) {
    json p = json::array();
    for (const auto& r : l.pkeys) p.push_back({{"low", r.low}, {"high", r.high}});
    j["pkeys"] = p;
  }
  return j;
}

std::string level_text(const pol::Level& l) {
  std::string s = fmt::format("level {}: sl {}", l.name, l.sl);
  if (l.mtu_limit) s += fmt::format(", mtu-limit {}", *l.mtu_limit);
  if (l.rate_limit) s += fmt::format(", rate-limit {}", *l.rate_limit);
  if (l.packet_life) s += fmt::format(", packet-life {}", *l.packet_life);
  for (size_t i = 0; i < l.pkeys.size(); ++i)
    s += fmt::format("{}0x{:04x}-0x{:04x}", i == 0 ? ", pkey " : ",", l.pkeys[i].low,
                     l.pkeys[i].high);
  return s;
}

void setup_explain(CLI::App& policy) {
  auto* cmd = policy.add_subcommand(
      "explain",
      "show which rule a PathRecord query matches, why earlier rules did not, and "
      "the resulting level");
  auto a = std::make_shared<ExplainArgs>();
  add_inputs(cmd, a->in);
  cmd->add_option("--service-id", a->service_id, "Service-ID of the query (both SID mask bits)");
  cmd->add_option("--qos-class", a->qos_class, "QoS class of the query");
  cmd->add_option("--pkey", a->pkey, "PKey of the query");
  cmd->add_option("--src", a->src, "source port: GUID, or node description[/P<n>] (--fabric)");
  cmd->add_option("--dst", a->dst, "destination port: GUID, or node description[/P<n>] (--fabric)");
  cmd->add_option("--tclass", a->tclass,
                  "traffic class of the query, for tclass rules (an rdma-qos extension)");
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a] {
    Loaded l = load(a->in);
    if (l.io_error || l.input_errors || !l.compiled.policy) {
      set_exit_code(load_failure(l));
      return;
    }
    const pol::Fabric* fabric = l.fabric ? &*l.fabric : nullptr;
    pol::PathQuery q;
    auto fail = [](const std::string& msg) {
      std::cerr << "rdma-qos: " << msg << "\n";
      set_exit_code(kExitUsage);
    };
    if (!a->service_id.empty()) {
      auto v = parse_unsigned(a->service_id);
      if (!v) return fail("--service-id needs a number");
      q.service_id = *v;
      q.component_mask |= pol::kCompServiceIdMsb | pol::kCompServiceIdLsb;
    }
    if (!a->qos_class.empty()) {
      auto v = parse_unsigned(a->qos_class);
      if (!v || *v > 0xFFF) return fail("--qos-class needs a number in 0..4095");
      q.qos_class = static_cast<uint16_t>(*v);
      q.component_mask |= pol::kCompQosClass;
    }
    if (!a->pkey.empty()) {
      auto v = parse_unsigned(a->pkey);
      if (!v || *v > 0xFFFF) return fail("--pkey needs a number in 0..0xffff");
      q.pkey = static_cast<uint16_t>(*v);
      q.component_mask |= pol::kCompPkey;
    }
    if (!a->tclass.empty()) {
      auto v = parse_unsigned(a->tclass, 0xFF);
      if (!v) return fail("--tclass needs a number in 0..255");
      q.tclass = static_cast<uint8_t>(*v);
    }
    if (!a->src.empty()) {
      auto e = endpoint(a->src, fabric);
      if (!e) return fail(fmt::format("unknown source port '{}'", a->src));
      std::tie(q.source_guid, q.source_type) = *e;
    }
    if (!a->dst.empty()) {
      auto e = endpoint(a->dst, fabric);
      if (!e) return fail(fmt::format("unknown destination port '{}'", a->dst));
      std::tie(q.destination_guid, q.destination_type) = *e;
    }
    const pol::CompiledPolicy& p = *l.compiled.policy;
    pol::Explanation e = p.explain(q);
    const std::string& file = a->in.file;
    if (a->json) {
      json considered = json::array();
      for (const auto& v : e.considered)
        considered.push_back({{"rule", v.rule + 1},
                              {"line", p.rules()[v.rule]->location.line},
                              {"failed", v.failed == pol::Criterion::kNone
                                             ? json(nullptr)
                                             : json(std::string(pol::criterion_name(v.failed)))}});
      json j{{"file", file}, {"considered", considered}, {"level", level_json(*e.result.level)}};
      if (e.result.rule) {
        const pol::MatchRule& r = *p.rules()[*e.result.rule];
        j["matched"] = {{"rule", *e.result.rule + 1}, {"line", r.location.line}, {"text", r.text}};
      } else {
        j["matched"] = nullptr;
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    for (const auto& v : e.considered) {
      const pol::MatchRule& r = *p.rules()[v.rule];
      if (v.failed == pol::Criterion::kNone)
        std::cout << fmt::format("{}:{}: rule {} matched: {}\n", file, r.location.line, v.rule + 1,
                                 r.text);
      else
        std::cout << fmt::format("{}:{}: rule {} failed on {}\n", file, r.location.line, v.rule + 1,
                                 pol::criterion_name(v.failed));
    }
    if (!e.result.rule) std::cout << "no rule matched: default level\n";
    std::cout << level_text(*e.result.level) << "\n";
  });
}

// ---- dump -----------------------------------------------------------------------------------

json ranges_json(const pol::RangeList& rl) {
  json a = json::array();
  for (const auto& r : rl) a.push_back(r.low == r.high ? json(r.low) : json{r.low, r.high});
  return a;
}

std::string ranges_text(const pol::RangeList& rl) {
  std::string s;
  for (const auto& r : rl) {
    if (!s.empty()) s += ", ";
    s += r.low == r.high ? fmt::format("0x{:x}", r.low)
                         : fmt::format("0x{:x}-0x{:x}", r.low, r.high);
  }
  return s;
}

json rule_json(const pol::CompiledPolicy& p, size_t i) {
  const pol::MatchRule& r = *p.rules()[i];
  json j{{"rule", i + 1},
         {"line", r.location.line},
         {"level", p.rule_level(i).name},
         {"sl", p.rule_level(i).sl}};
  if (!r.qos_classes.empty()) j["qos_class"] = ranges_json(r.qos_classes);
  if (!r.service_ids.empty()) j["service_id"] = ranges_json(r.service_ids);
  if (!r.pkeys.empty()) j["pkey"] = ranges_json(r.pkeys);
  if (!r.tclasses.empty()) j["tclass"] = ranges_json(r.tclasses);
  if (!r.sources.empty()) j["source"] = r.sources;
  if (!r.destinations.empty()) j["destination"] = r.destinations;
  if (r.source_guids) j["source_guids"] = ranges_json(*r.source_guids);
  if (r.destination_guids) j["destination_guids"] = ranges_json(*r.destination_guids);
  if (p.rule_disabled(i)) j["disabled"] = true;
  if (r.ulp != pol::UlpKind::kNone) j["ulp"] = r.text;
  return j;
}

json policy_json(const pol::CompiledPolicy& p) {
  const pol::Policy& pol_ = p.policy();
  json groups = json::array();
  for (const auto& g : pol_.port_groups) {
    json j{{"name", g.name}, {"line", g.location.line}};
    if (!g.port_guids.empty()) j["port_guid"] = ranges_json(g.port_guids);
    if (!g.port_names.empty()) {
      json n = json::array();
      for (const auto& pn : g.port_names)
        n.push_back(fmt::format("{}/P{}", pn.node_description, pn.port));
      j["port_name"] = n;
    }
    if (!g.pkeys.empty()) j["pkey"] = ranges_json(g.pkeys);
    if (!g.partitions.empty()) j["partition"] = g.partitions;
    if (g.node_types || g.self) {
      json t = json::array();
      if (g.node_types & pol::kNodeTypeCa) t.push_back("CA");
      if (g.node_types & pol::kNodeTypeSwitch) t.push_back("SWITCH");
      if (g.node_types & pol::kNodeTypeRouter) t.push_back("ROUTER");
      if (g.self) t.push_back("SELF");
      j["node_type"] = t;
    }
    groups.push_back(j);
  }
  json levels = json::array();
  for (const auto& l : pol_.levels) {
    json j = level_json(
        {l.name, l.sl, l.mtu_limit, l.rate_limit, l.packet_life, l.pkeys, {}, l.path_bits});
    j["line"] = l.location.line;
    if (!l.path_bits.empty()) j["path_bits"] = ranges_json(l.path_bits);
    levels.push_back(j);
  }
  json rules = json::array();
  for (size_t i = 0; i < p.rules().size(); ++i) rules.push_back(rule_json(p, i));
  return {{"port_groups", groups},
          {"qos_levels", levels},
          {"rules", rules},
          {"default_level", level_json(p.default_level())},
          {"qos_setup",
           {{"vlarb_scopes", pol_.setup.vlarb_scopes.size()},
            {"sl2vl_scopes", pol_.setup.sl2vl_scopes.size()}}}};
}

void print_dump_text(const pol::CompiledPolicy& p) {
  const pol::Policy& pol_ = p.policy();
  for (const auto& g : pol_.port_groups) {
    std::cout << fmt::format("port-group {} (line {})\n", g.name, g.location.line);
    if (!g.port_guids.empty()) std::cout << "  port-guid: " << ranges_text(g.port_guids) << "\n";
    for (const auto& pn : g.port_names)
      std::cout << fmt::format("  port-name: \"{}/P{}\"\n", pn.node_description, pn.port);
    if (!g.pkeys.empty()) std::cout << "  pkey: " << ranges_text(g.pkeys) << "\n";
    for (const auto& n : g.partitions) std::cout << "  partition: " << n << "\n";
    if (g.node_types || g.self)
      std::cout << fmt::format(
          "  node-type:{}{}{}{}\n", g.node_types & pol::kNodeTypeCa ? " CA" : "",
          g.node_types & pol::kNodeTypeSwitch ? " SWITCH" : "",
          g.node_types & pol::kNodeTypeRouter ? " ROUTER" : "", g.self ? " SELF" : "");
  }
  for (const auto& l : pol_.levels)
    std::cout
        << level_text(
               {l.name, l.sl, l.mtu_limit, l.rate_limit, l.packet_life, l.pkeys, {}, l.path_bits})
        << fmt::format(" (line {})\n", l.location.line);
  for (size_t i = 0; i < p.rules().size(); ++i) {
    const pol::MatchRule& r = *p.rules()[i];
    std::string c;
    if (!r.sources.empty()) c += " source " + fmt::format("{}", fmt::join(r.sources, ","));
    if (r.source_guids) c += " source-guid " + ranges_text(*r.source_guids);
    if (!r.destinations.empty())
      c += " destination " + fmt::format("{}", fmt::join(r.destinations, ","));
    if (r.destination_guids) c += " destination-guid " + ranges_text(*r.destination_guids);
    if (!r.qos_classes.empty()) c += " qos-class " + ranges_text(r.qos_classes);
    if (!r.service_ids.empty()) c += " service-id " + ranges_text(r.service_ids);
    if (!r.pkeys.empty()) c += " pkey " + ranges_text(r.pkeys);
    if (!r.tclasses.empty()) c += " tclass " + ranges_text(r.tclasses);
    if (c.empty()) c = " (every query)";
    std::cout << fmt::format("rule {} (line {}):{} -> {} (sl {}){}\n", i + 1, r.location.line, c,
                             p.rule_level(i).name, p.rule_level(i).sl,
                             p.rule_disabled(i) ? " [disabled]" : "");
  }
  std::cout << "default -> " << level_text(p.default_level()) << "\n";
}

void setup_dump(CLI::App& policy) {
  auto* cmd = policy.add_subcommand("dump", "print the normalised policy the engine understood");
  auto in = std::make_shared<Inputs>();
  auto as_json = std::make_shared<bool>(false);
  add_inputs(cmd, *in);
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([in, as_json] {
    Loaded l = load(*in);
    if (l.io_error || l.input_errors || !l.compiled.policy) {
      set_exit_code(load_failure(l));
      return;
    }
    if (*as_json)
      std::cout << policy_json(*l.compiled.policy).dump(2) << "\n";
    else
      print_dump_text(*l.compiled.policy);
  });
}

// ---- vlarb ----------------------------------------------------------------------------------

void setup_vlarb(CLI::App& policy) {
  auto* cmd = policy.add_subcommand(
      "vlarb",
      "show each VL's bandwidth share under saturation and the high-priority burst "
      "from the QoS options of an opensm.conf");
  auto file = std::make_shared<std::string>();
  auto mtu = std::make_shared<int>(4096);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("FILE", *file, "opensm.conf")->required();
  add_number(*cmd, "--mtu", *mtu, "packet size in bytes the links carry (default 4096)")
      ->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([file, mtu, as_json] {
    auto text = read_file(*file);
    if (!text) {
      std::cerr << fmt::format("rdma-qos: cannot read '{}'\n", *file);
      set_exit_code(kExitUsage);
      return;
    }
    pol::OpenSmConfResult r = pol::parse_opensm_conf(*text);
    for (const auto& d : r.diagnostics) std::cerr << rdmaqos::format_diagnostic(d, *file) << "\n";
    if (rdmaqos::has_errors(r.diagnostics)) {
      set_exit_code(kExitFinding);
      return;
    }
    json all = json::object();
    for (pol::PortClass c : pol::kPortClasses) {
      const pol::QosPortConfig& pc = r.config.port(c);
      pol::VlArbAnalysis a = pol::analyze_vlarb(pc, *mtu);
      std::string name(pol::port_class_prefix(c));
      if (*as_json) {
        json vls = json::array();
        for (const auto& v : a.vls)
          vls.push_back({{"vl", v.vl},
                         {"high_weight", v.high_weight},
                         {"low_weight", v.low_weight},
                         {"share", v.share}});
        all[name] = {
            {"max_vls", pc.max_vls},
            {"high_limit", pc.high_limit},
            {"high_burst_bytes", a.high_burst_bytes ? json(*a.high_burst_bytes) : json(nullptr)},
            {"high_fraction", a.high_fraction},
            {"vls", vls},
            {"sl2vl", pc.sl2vl},
            {"warnings", a.warnings}};
        continue;
      }
      std::cout << fmt::format(
          "qos_{}: max_vls {}, high_limit {} (burst {}), high priority "
          "{:.1f}% of the link\n",
          name, pc.max_vls, pc.high_limit,
          a.high_burst_bytes ? fmt::format("{} bytes", *a.high_burst_bytes)
                             : std::string("unbounded"),
          100 * a.high_fraction);
      for (const auto& v : a.vls)
        std::cout << fmt::format("  VL{:<2} high {:>3}  low {:>3}  share {:5.1f}%\n", v.vl,
                                 v.high_weight, v.low_weight, 100 * v.share);
      for (const auto& w : a.warnings) std::cout << "  warning: " << w << "\n";
    }
    if (*as_json) std::cout << all.dump(2) << "\n";
  });
}

void setup_policy(CLI::App& app) {
  auto* policy = app.add_subcommand("policy", "check, explain and dump QoS policy files");
  policy->require_subcommand(1);
  setup_check(*policy);
  setup_explain(*policy);
  setup_dump(*policy);
  setup_vlarb(*policy);
}

const CommandRegistration kRegistration{"policy", &setup_policy};

}  // namespace
}  // namespace rdmaqos::cli::cmd_policy
