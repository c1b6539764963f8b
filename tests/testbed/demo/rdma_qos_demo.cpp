// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-demo: brings up a simulated fat tree, lets OpenSM configure it while enforcing the
// sample policy and asks its SA for one path per sample service; then OpenSM stops and
// rdma-qos-sad takes over the SM's port with the same policy and gets the same queries. Prints
// what each service gets from rdma-qos-sad, next to OpenSM's answer where the two differ.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/saquery.h"

namespace {

using namespace rdmaqos::testbed;

struct Service {
  std::string name;
  std::optional<uint64_t> service_id;
  std::optional<int> qos_class;
  std::string src, dst;
};

// Service-ID = (port space << 16) | port; RDMA_PS_TCP 0x0106 for iSER, RDS, NFS/RDMA, Lustre.
constexpr uint64_t tcp_ps(uint16_t port) {
  return 0x01060000ULL | port;
}
constexpr uint64_t sdp_ps(uint16_t port) {
  return 0x00010000ULL | port;
}

const std::vector<Service> kServices = {
    {"MPI (no Service-ID)", std::nullopt, std::nullopt, "node001", "node002"},
    {"MPI control, QoS-Class 1", std::nullopt, 1, "node001", "node002"},
    {"iSER (TCP 3260)", tcp_ps(3260), std::nullopt, "node001", "node005"},
    {"Lustre o2ib (TCP 987)", tcp_ps(987), std::nullopt, "node002", "node007"},
    {"NFS/RDMA (TCP 20049)", tcp_ps(20049), std::nullopt, "node003", "node007"},
    {"NFS/RDMA, not a server", tcp_ps(20049), std::nullopt, "node003", "node004"},
    {"SDP (port 5000)", sdp_ps(5000), std::nullopt, "node004", "node001"},
    {"RDS (TCP 18634)", tcp_ps(18634), std::nullopt, "node005", "node006"},
    {"SRP to node008", std::nullopt, std::nullopt, "node006", "node008"},
    {"Backup, QoS-Class 4", std::nullopt, 4, "node005", "node001"},
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string rate_text(int code) {
  double g = rate_code_gbps(code);
  return g == 0 ? fmt::format("code {}", code) : fmt::format("{:g} Gb/s", g);
}

// IBA packet lifetime: 4.096 us * 2^value.
std::string lifetime_text(int value) {
  double us = 4.096 * static_cast<double>(1ULL << value);
  return us >= 1000 ? fmt::format("{:.1f} ms", us / 1000) : fmt::format("{:.1f} us", us);
}

// One service's answer from one SA: the path, or why there is none.
struct Answer {
  std::optional<PathAnswer> path;
  std::string error;
};

std::vector<Answer> ask(const IbFabric& fabric) {
  const Topology& topo = fabric.topology();
  std::vector<Answer> out;
  for (const auto& s : kServices) {
    std::vector<std::string> q = {"saquery", "-p",
                                  "--slid",  std::to_string(topo.node(s.src).lid),
                                  "--dlid",  std::to_string(topo.node(s.dst).lid)};
    if (s.service_id) q.insert(q.end(), {"--service_id", fmt::format("0x{:x}", *s.service_id)});
    if (s.qos_class) q.insert(q.end(), {"--qos_class", std::to_string(*s.qos_class)});
    RunResult r = fabric.run_at(s.src, q);
    auto records = parse_saquery_output(r.output);
    Answer a;
    if (r.exit_code == 0 && !records.empty()) a.path = path_answer(records[0]);
    if (!a.path) a.error = r.output.empty() ? fmt::format("exit {}", r.exit_code) : r.output;
    out.push_back(std::move(a));
  }
  return out;
}

// The fields a reader compares, as shown in the table.
std::vector<std::pair<std::string, std::string>> fields(const Answer& a) {
  if (!a.path) return {{"error", a.error.substr(0, a.error.find('\n'))}};
  return {{"SL", std::to_string(a.path->sl)},
          {"MTU", std::to_string(mtu_code_bytes(a.path->mtu))},
          {"rate", rate_text(a.path->rate)},
          {"lifetime", lifetime_text(a.path->packet_life)}};
}

// "same", or OpenSM's values of the fields that differ from ours.
std::string difference(const Answer& ours, const Answer& opensm) {
  auto a = fields(ours), b = fields(opensm);
  if (a == b) return "same";
  std::string out;
  if (a.size() != b.size()) {
    // One of the two has no path: all of OpenSM's answer.
    if (b.size() == 1) return "no path: " + b[0].second;
    for (const auto& [name, value] : b) out += (out.empty() ? "" : ", ") + name + " " + value;
    return out;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) out += (out.empty() ? "" : ", ") + b[i].first + " " + b[i].second;
  return out;
}

nlohmann::json answer_json(const Answer& a) {
  if (!a.path) return {{"error", a.error}};
  return {{"sl", a.path->sl},
          {"mtu", mtu_code_bytes(a.path->mtu)},
          {"rate_gbps", rate_code_gbps(a.path->rate)},
          {"packet_life", a.path->packet_life}};
}

// rdma-qos-sad at the SM's port (OpenSM stopped), ready once saquery -c gets ClassPortInfo.
Process start_sad(const IbFabric& fabric, const std::string& sad, const std::string& policy_file) {
  ProcessOptions p;
  // Both run from the fabric's directory.
  p.argv = {std::filesystem::absolute(sad).string(), "--foreground", "--policy",
            std::filesystem::absolute(policy_file).string()};
  p.env = fabric.client_env(fabric.topology().sm_node().id);
  p.cwd = fabric.dir();
  p.output_path = fabric.dir() + "/rdma-qos-sad.log";
  Process proc = Process::spawn(p);
  for (int i = 0; i < 150 && proc.running(); ++i) {
    if (fabric.run_at("node001", {"saquery", "-c"}).exit_code == 0) return proc;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw std::runtime_error("rdma-qos-sad did not start answering:\n" + slurp(p.output_path));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Show the QoS each sample service gets from rdma-qos-sad enforcing a policy on a "
      "simulated InfiniBand fat tree (ibsim), next to what OpenSM's SA answers with the same "
      "policy.",
      "rdma-qos-demo"};
  std::string policy_file = RDMA_QOS_EXAMPLE_POLICY;
  std::string sad = RDMA_QOS_SAD;
  std::string plugin_dir;
  bool json = false;
  app.add_option("--policy", policy_file, "QoS policy file (OpenSM syntax)")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--sad", sad, "the rdma-qos-sad program")->capture_default_str();
  app.add_option("--plugin-dir", plugin_dir,
                 "directory of librdma-qos-opensm.so: answer with OpenSM and the rdma-qos plugin "
                 "instead of rdma-qos-sad");
  app.add_flag("--json", json, "print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);

  try {
    IbFabricOptions options;
    options.topology = make_fat_tree({});
    options.policy = slurp(policy_file);
    if (!json) std::cerr << "Starting ibsim and OpenSM (policy " << policy_file << ") ...\n";
    IbFabric fabric(options);
    const std::vector<Answer> opensm = ask(fabric);
    std::vector<Answer> ours;
    const std::string sa_name = plugin_dir.empty() ? "rdma-qos-sad" : "OpenSM + rdma-qos plugin";
    if (plugin_dir.empty()) {
      if (!json)
        std::cerr << "OpenSM configured the fabric; starting rdma-qos-sad at its port ...\n";
      fabric.stop_sm();
      Process sa = start_sad(fabric, sad, policy_file);
      ours = ask(fabric);
      sa.stop();
    } else {
      // OpenSM once more, on a fabric of its own, with the plugin given the policy; OpenSM
      // keeps running (and sweeping) while the plugin answers PathRecord.
      fabric.stop();
      IbFabricOptions po;
      po.topology = make_fat_tree({});
      po.files["plugin-policy.conf"] = slurp(policy_file);
      po.opensm_conf =
          "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
          "event_plugin_options policy=@DIR@/plugin-policy.conf control-socket=@DIR@/plugin.sock\n";
      po.opensm_env["LD_LIBRARY_PATH"] = std::filesystem::absolute(plugin_dir).string();
      if (!json) std::cerr << "Starting OpenSM with the rdma-qos plugin ...\n";
      IbFabric with_plugin(po);
      for (int i = 0; i < 200; ++i) {
        if (with_plugin.opensm_log().find("rdma-qos plugin: answering") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (with_plugin.opensm_log().find("rdma-qos plugin: answering") == std::string::npos)
        throw std::runtime_error("the plugin did not answer:\n" + with_plugin.opensm_log());
      ours = ask(with_plugin);
      if (!json) {
        std::cerr << "OpenSM's log, the plugin's lines:\n";
        std::istringstream lines(with_plugin.opensm_log());
        for (std::string line; std::getline(lines, line);)
          if (line.find("rdma-qos plugin:") != std::string::npos) std::cerr << "  " << line << "\n";
        std::cerr << "OpenSM (pid " << with_plugin.pids().at(1) << ") is still the SM and SA.\n";
      }
    }

    nlohmann::json rows = nlohmann::json::array();
    std::string table =
        fmt::format("{:<26} {:<18} {:>9} {:<17} {:>3} {:>5} {:>9} {:>9}  {}\n", "service",
                    "Service-ID", "QoS-Class", "path", "SL", "MTU", "rate", "lifetime", "OpenSM");
    table += std::string(table.size() - 1, '-') + "\n";
    int failures = 0, differences = 0;
    for (size_t i = 0; i < kServices.size(); ++i) {
      const Service& s = kServices[i];
      const Answer& a = ours[i];
      std::string sid = s.service_id ? fmt::format("0x{:016x}", *s.service_id) : "-";
      std::string qc = s.qos_class ? std::to_string(*s.qos_class) : "-";
      std::string path = s.src + "->" + s.dst;
      std::string diff = difference(a, opensm[i]);
      if (diff != "same") ++differences;
      nlohmann::json row = {
          {"service", s.name},
          {"service_id", s.service_id ? nlohmann::json(sid) : nlohmann::json()},
          {"qos_class", s.qos_class ? nlohmann::json(*s.qos_class) : nlohmann::json()},
          {"source", s.src},
          {"destination", s.dst},
          {"same_as_opensm", diff == "same"},
          {"opensm", answer_json(opensm[i])}};
      if (!a.path) {
        ++failures;
        table += fmt::format("{:<26} {:<18} {:>9} {:<17} query failed: {}  {}\n", s.name, sid, qc,
                             path, a.error.substr(0, a.error.find('\n')).substr(0, 50), diff);
        row["error"] = a.error;
        rows.push_back(row);
        continue;
      }
      table += fmt::format("{:<26} {:<18} {:>9} {:<17} {:>3} {:>5} {:>9} {:>9}  {}\n", s.name, sid,
                           qc, path, a.path->sl, mtu_code_bytes(a.path->mtu),
                           rate_text(a.path->rate), lifetime_text(a.path->packet_life), diff);
      row.update(answer_json(a));
      rows.push_back(row);
    }
    if (json) {
      std::cout << nlohmann::json{{"sa", sa_name},
                                  {"compared_with", "OpenSM"},
                                  {"differences", differences},
                                  {"paths", rows}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << "\nPaths answered by " << sa_name << " on the simulated fabric (policy "
                << policy_file << "),\nnext to OpenSM's answers to the same queries:\n\n"
                << table << "\n"
                << (differences == 0
                        ? sa_name + " and OpenSM alone gave the same answer to every query.\n"
                        : fmt::format("{} of {} answers differ from OpenSM's (OpenSM column).\n",
                                      differences, kServices.size()));
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rdma-qos-demo: " << e.what() << "\n";
    return 2;
  }
}
