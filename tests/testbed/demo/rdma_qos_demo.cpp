// rdma-qos-demo: brings up a simulated fat tree with OpenSM enforcing the sample policy,
// asks the SA for one path per sample service and prints what each service gets.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Show the QoS each sample service gets from OpenSM enforcing a policy on a "
      "simulated InfiniBand fat tree (ibsim).",
      "rdma-qos-demo"};
  std::string policy_file = RDMA_QOS_EXAMPLE_POLICY;
  bool json = false;
  app.add_option("--policy", policy_file, "QoS policy file (OpenSM syntax)")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_flag("--json", json, "print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);

  try {
    IbFabricOptions options;
    options.topology = make_fat_tree({});
    options.policy = slurp(policy_file);
    if (!json) std::cerr << "Starting ibsim and OpenSM (policy " << policy_file << ") ...\n";
    IbFabric fabric(options);
    const Topology& topo = fabric.topology();

    nlohmann::json rows = nlohmann::json::array();
    std::string table =
        fmt::format("{:<26} {:<18} {:>9} {:<17} {:>3} {:>5} {:>9} {:>9}\n", "service", "Service-ID",
                    "QoS-Class", "path", "SL", "MTU", "rate", "lifetime");
    table += std::string(table.size() - 1, '-') + "\n";
    int failures = 0;
    for (const auto& s : kServices) {
      std::vector<std::string> q = {"saquery", "-p",
                                    "--slid",  std::to_string(topo.node(s.src).lid),
                                    "--dlid",  std::to_string(topo.node(s.dst).lid)};
      if (s.service_id) q.insert(q.end(), {"--service_id", fmt::format("0x{:x}", *s.service_id)});
      if (s.qos_class) q.insert(q.end(), {"--qos_class", std::to_string(*s.qos_class)});
      RunResult r = fabric.run_at(s.src, q);
      auto records = parse_saquery_output(r.output);
      std::optional<PathAnswer> a;
      if (r.exit_code == 0 && !records.empty()) a = path_answer(records[0]);
      std::string sid = s.service_id ? fmt::format("0x{:016x}", *s.service_id) : "-";
      std::string qc = s.qos_class ? std::to_string(*s.qos_class) : "-";
      std::string path = s.src + "->" + s.dst;
      if (!a) {
        ++failures;
        table += fmt::format("{:<26} {:<18} {:>9} {:<17} query failed: {}\n", s.name, sid, qc, path,
                             r.output.substr(0, 60));
        rows.push_back({{"service", s.name}, {"error", r.output}});
        continue;
      }
      table += fmt::format("{:<26} {:<18} {:>9} {:<17} {:>3} {:>5} {:>9} {:>9}\n", s.name, sid, qc,
                           path, a->sl, mtu_code_bytes(a->mtu), rate_text(a->rate),
                           lifetime_text(a->packet_life));
      rows.push_back({{"service", s.name},
                      {"service_id", s.service_id ? nlohmann::json(sid) : nlohmann::json()},
                      {"qos_class", s.qos_class ? nlohmann::json(*s.qos_class) : nlohmann::json()},
                      {"source", s.src},
                      {"destination", s.dst},
                      {"sl", a->sl},
                      {"mtu", mtu_code_bytes(a->mtu)},
                      {"rate_gbps", rate_code_gbps(a->rate)},
                      {"packet_life", a->packet_life}});
    }
    if (json)
      std::cout << nlohmann::json{{"sa", "OpenSM"}, {"paths", rows}}.dump(2) << "\n";
    else
      std::cout << "\nPaths answered by OpenSM's SA on the simulated fabric:\n\n" << table;
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rdma-qos-demo: " << e.what() << "\n";
    return 2;
  }
}
