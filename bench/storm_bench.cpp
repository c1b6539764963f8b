// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The job-start storm side by side: for each fabric size, storm-client (N nodes x R ranks x P
// peers) against OpenSM's SA, then against rdma-qos-sad at the same port of the same fabric,
// without and with a host-side path cache. Prints a table, and writes a data file and a
// gnuplot script (and the PNG when gnuplot is installed) of time-to-resolve against nodes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rdma-qos/testbed/ib_fabric.h"

namespace tb = rdmaqos::testbed;
using namespace std::chrono_literals;

namespace {

struct Result {
  std::string sa;
  int nodes = 0;
  bool cache = false;
  nlohmann::json j;
};

nlohmann::json json_line(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') return nlohmann::json::parse(line, nullptr, false);
  }
  return nlohmann::json();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Job-start PathRecord storm against OpenSM's SA and rdma-qos-sad on ibsim"};
  std::string sad, client, out_dir = ".";
  std::vector<int> sizes = {100, 300, 1000};
  int ranks = 8, peers = 32;
  std::string pattern = "stencil";
  size_t window = 32;
  app.add_option("--sad", sad, "the rdma-qos-sad binary")->required();
  app.add_option("--client", client, "the storm-client binary")->required();
  app.add_option("--nodes", sizes, "fabric sizes (compute CAs)")->delimiter(',');
  app.add_option("--ranks", ranks, "ranks per node");
  app.add_option("--peers", peers, "peers per rank");
  app.add_option("--window", window, "queries outstanding at once");
  app.add_option("--pattern", pattern, "peers: stencil (the next P nodes) or random per rank");
  app.add_option("--out", out_dir, "where storm.dat, storm.gp and storm.png go");
  CLI11_PARSE(app, argc, argv);
  sad = std::filesystem::absolute(sad).string();
  client = std::filesystem::absolute(client).string();
  out_dir = std::filesystem::absolute(out_dir).string();

  std::vector<Result> results;
  auto storm = [&](tb::IbFabric& fabric, const std::string& sa, int nodes, bool cache) {
    std::vector<std::string> args = {client,
                                     "--nodes",
                                     std::to_string(nodes),
                                     "--ranks",
                                     std::to_string(ranks),
                                     "--peers",
                                     std::to_string(peers),
                                     "--window",
                                     std::to_string(window),
                                     "--pattern",
                                     pattern};
    if (cache) args.push_back("--cache");
    tb::RunResult r = fabric.run_at("node001", args, 1800s);
    nlohmann::json j = json_line(r.output);
    if (j.is_discarded() || j.is_null()) {
      fmt::print(stderr, "{} at {} nodes: no result (exit {}):\n{}\n", sa, nodes, r.exit_code,
                 r.output.substr(0, 2000));
      j = nlohmann::json::object();
    }
    results.push_back({sa, nodes, cache, j});
    fmt::print("{:>12} {:>6} {:>6} {:>9} {:>8} {:>10.2f} {:>10.0f} {:>9.0f} {:>9.0f}\n", sa, nodes,
               cache ? "yes" : "no", j.value("queries", 0), j.value("failed", 0),
               j.value("seconds", 0.0), j.value("qps", 0.0), j.value("p50_us", 0.0),
               j.value("p99_us", 0.0));
    std::fflush(stdout);
  };

  fmt::print("storm: N nodes x {} ranks x {} peers ({}), one client at node001, window {}\n", ranks,
             peers, pattern, window);
  fmt::print("{:>12} {:>6} {:>6} {:>9} {:>8} {:>11} {:>10} {:>9} {:>9}\n", "SA", "nodes", "cache",
             "queries", "failed", "resolve(s)", "queries/s", "p50(us)", "p99(us)");
  for (int nodes : sizes) {
    tb::FatTreeSpec spec;
    spec.cas = nodes;
    spec.cas_per_leaf = 32;
    spec.spines = 4;
    tb::IbFabricOptions o = tb::fabric_options(tb::make_fat_tree(spec));
    o.start_timeout = 900s;
    tb::IbFabric fabric(o);
    storm(fabric, "OpenSM", nodes, false);
    storm(fabric, "OpenSM", nodes, true);
    fabric.stop_sm();
    tb::ProcessOptions p;
    p.argv = {sad, "--foreground", "--no-policy"};
    p.env = fabric.client_env(fabric.topology().sm_node().id);
    p.cwd = fabric.dir();
    p.output_path = fabric.dir() + "/sad.log";
    auto started = fabric.start_until_answering(p, {"saquery", "-c"}, 600s);
    if (started.probe.exit_code != 0) {
      fmt::print(stderr, "rdma-qos-sad did not answer at {} nodes\n", nodes);
      return 1;
    }
    storm(fabric, "rdma-qos-sad", nodes, false);
    storm(fabric, "rdma-qos-sad", nodes, true);
  }

  // Time until every rank has its paths, against nodes: one line per SA and cache setting.
  std::ofstream dat(out_dir + "/storm.dat");
  for (const char* sa : {"OpenSM", "rdma-qos-sad"}) {
    for (bool cache : {false, true}) {
      dat << fmt::format("# {} {}\n", sa, cache ? "with cache" : "no cache");
      for (const Result& r : results)
        if (r.sa == sa && r.cache == cache) {
          dat << fmt::format("{} {}\n", r.nodes, r.j.value("seconds", 0.0));
        }
      dat << "\n\n";
    }
  }
  dat.close();
  std::ofstream gp(out_dir + "/storm.gp");
  gp << fmt::format(
      "set terminal pngcairo size 800,500\nset output '{0}/storm.png'\n"
      "set title 'Job-start storm: {1} ranks x {2} peers per node (ibsim)'\n"
      "set xlabel 'nodes'\nset ylabel 'time until every rank has its paths (s)'\n"
      "set logscale y\nset key left top\n"
      "plot '{0}/storm.dat' index 0 with linespoints title 'OpenSM', \\\n"
      "     '' index 1 with linespoints title 'OpenSM, path cache', \\\n"
      "     '' index 2 with linespoints title 'rdma-qos-sad', \\\n"
      "     '' index 3 with linespoints title 'rdma-qos-sad, path cache'\n",
      out_dir, ranks, peers);
  gp.close();
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    int rc = std::system(("gnuplot '" + out_dir + "/storm.gp'").c_str());
    fmt::print("plot: {}/storm.png{}\n", out_dir, rc == 0 ? "" : " (gnuplot failed)");
  } else {
    fmt::print("plot script: {}/storm.gp (gnuplot not installed)\n", out_dir);
  }
  return 0;
}
