// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The job-start storm side by side: for each fabric size, storm-client (N nodes x R ranks x P
// peers) against OpenSM's SA, then against rdma-qos-sad at the same port of the same fabric,
// then (with --plugin-dir) against OpenSM with the rdma-qos plugin on a fabric of its own; each
// without and with a host-side path cache, and with PathRecord Gets or MultiPathRecords of a
// few peers each. Prints a table, and writes a data file and a gnuplot script (and the PNG
// when gnuplot is installed) of time-to-resolve against nodes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "storm_common.h"

namespace tb = rdmaqos::testbed;
using namespace std::chrono_literals;

namespace {

struct Mode {
  bool cache = false;
  size_t mpr = 0;  // peers per MultiPathRecord; 0: PathRecord Gets
};

struct Result {
  std::string sa;
  int nodes = 0;
  Mode mode;
  nlohmann::json j;
};

std::string mode_name(const Mode& m) {
  std::string s = m.cache ? "path cache" : "no cache";
  if (m.mpr > 0) s += fmt::format(", MPR x{}", m.mpr);
  return s;
}

// Port GUIDs of the compute CAs in LID order, for the client's MultiPathRecord GIDs.
std::string write_port_guids(const tb::IbFabric& fabric) {
  const std::string path = fabric.dir() + "/port-guids.txt";
  std::ofstream out(path);
  for (const tb::TopoNode* ca : fabric.topology().cas())
    out << fmt::format("{:x}\n", ca->port_guid);
  return path;
}

// OpenSM loads the plugin; true once the plugin answers (its log line), false if it never does.
bool wait_for_plugin(const tb::IbFabric& fabric, std::chrono::seconds limit) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(200ms)) {
    const std::string log = fabric.opensm_log();
    if (log.find("cannot load plugin") != std::string::npos) return false;
    if (log.find("rdma-qos plugin: answering") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Job-start PathRecord storm against OpenSM's SA, rdma-qos-sad and the plugin"};
  std::string sad, client, plugin_dir, out_dir = ".";
  // The job (1,000 nodes x 32 ranks x 100 peers), with smaller fabrics for the curve.
  std::vector<int> sizes = {100, 300, 1000};
  int ranks = 32, peers = 100;
  std::string pattern = "stencil";
  size_t window = 32;
  // Two peers per MultiPathRecord: without RMPP (umad2sim) an answer is one MAD, and umad2sim
  // passes only its first 232 bytes intact, so a third 64-byte PathRecord comes back garbled.
  size_t mpr = 2;
  app.add_option("--sad", sad, "the rdma-qos-sad binary")->required();
  app.add_option("--client", client, "the storm-client binary")->required();
  app.add_option("--plugin-dir", plugin_dir,
                 "directory of librdma-qos-opensm.so: adds OpenSM with the plugin");
  rdmaqos::add_number(app, "--nodes", sizes, "fabric sizes (compute CAs)")->delimiter(',');
  rdmaqos::add_number(app, "--ranks", ranks, "ranks per node");
  rdmaqos::add_number(app, "--peers", peers, "peers per rank");
  rdmaqos::add_number(app, "--window", window, "queries outstanding at once");
  app.add_option("--pattern", pattern, "peers: stencil (the next P nodes) or random per rank");
  rdmaqos::add_number(app, "--mpr", mpr,
                      "peers per MultiPathRecord in the batched rows; 0: no such rows");
  app.add_option("--out", out_dir, "where storm.dat, storm.gp and storm.png go");
  CLI11_PARSE(app, argc, argv);
  sad = std::filesystem::absolute(sad).string();
  client = std::filesystem::absolute(client).string();
  out_dir = std::filesystem::absolute(out_dir).string();
  if (!plugin_dir.empty()) plugin_dir = std::filesystem::absolute(plugin_dir).string();

  std::vector<Mode> modes = {{false, 0}, {true, 0}};
  if (mpr > 0) modes.insert(modes.end(), {{false, mpr}, {true, mpr}});
  std::vector<std::string> sas = {"OpenSM", "rdma-qos-sad"};
  if (!plugin_dir.empty()) sas.push_back("OpenSM+plugin");

  std::vector<Result> results;
  int status = 0;
  auto storm = [&](tb::IbFabric& fabric, const std::string& sa, int nodes) {
    const std::string guids = write_port_guids(fabric);
    for (const Mode& m : modes) {
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
      if (m.cache) args.push_back("--cache");
      if (m.mpr > 0)
        args.insert(args.end(), {"--mpr", std::to_string(m.mpr), "--port-guids", guids});
      tb::RunResult r = fabric.run_at("node001", args, 3600s);
      nlohmann::json j = rdmaqos::bench::json_line(r.output);
      if (j.is_discarded() || j.is_null()) {
        fmt::print(stderr, "{} at {} nodes: no result (exit {}):\n{}\n", sa, nodes, r.exit_code,
                   r.output.substr(0, 2000));
        j = nlohmann::json::object();
        status = 1;
      }
      if (r.exit_code != 0) {
        status = 1;
        // Lost queries: what our SA logged meanwhile (the fabric's directory goes at teardown).
        std::ifstream in(fabric.dir() + "/sad.log");
        std::string log(std::istreambuf_iterator<char>(in), {});
        if (!log.empty())
          fmt::print(stderr, "{} at {} nodes, {}: exit {}; sad.log ends:\n{}\n", sa, nodes,
                     mode_name(m), r.exit_code,
                     log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
      }
      results.push_back({sa, nodes, m, j});
      fmt::print(
          "{:>13} {:>5} {:>5} {:>5} {:>5} {:>3} {:>9} {:>9} {:>7} {:>10.2f} {:>9.0f} {:>8.0f} "
          "{:>8.0f}\n",
          sa, nodes, ranks, peers, m.cache ? "yes" : "no", m.mpr > 0 ? std::to_string(m.mpr) : "-",
          j.value("queries", 0), j.value("paths", 0), j.value("failed", 0) + j.value("missing", 0),
          j.value("seconds", 0.0), j.value("qps", 0.0), j.value("p50_us", 0.0),
          j.value("p99_us", 0.0));
      std::fflush(stdout);
    }
  };

  fmt::print(
      "storm: N nodes x {} ranks x {} peers ({}), one client at node001, window {}; MPR: peers "
      "per MultiPathRecord\n",
      ranks, peers, pattern, window);
  fmt::print("{:>13} {:>5} {:>5} {:>5} {:>5} {:>3} {:>9} {:>9} {:>7} {:>10} {:>9} {:>8} {:>8}\n",
             "SA", "nodes", "ranks", "peers", "cache", "MPR", "queries", "paths", "lost",
             "resolve(s)", "queries/s", "p50(us)", "p99(us)");
  std::fflush(stdout);
  for (int nodes : sizes) {
    {
      tb::IbFabric fabric(rdmaqos::bench::storm_fat_tree(nodes));
      storm(fabric, "OpenSM", nodes);
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
      storm(fabric, "rdma-qos-sad", nodes);
    }
    if (!plugin_dir.empty()) {
      // OpenSM with the plugin and no policy (partition SLs, as --no-policy for ours).
      tb::IbFabricOptions o = rdmaqos::bench::storm_fat_tree(nodes);
      o.opensm_conf = "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n";
      o.opensm_env["LD_LIBRARY_PATH"] = plugin_dir;
      tb::IbFabric fabric(o);
      if (!wait_for_plugin(fabric, 600s)) {
        fmt::print(stderr, "the plugin did not answer at {} nodes:\n{}\n", nodes,
                   fabric.opensm_log().substr(0, 4000));
        return 1;
      }
      storm(fabric, "OpenSM+plugin", nodes);
    }
  }

  // Time until every rank has its paths, against nodes: one line per SA and mode.
  std::ofstream dat(out_dir + "/storm.dat");
  std::string plot;
  int index = 0;
  for (size_t s = 0; s < sas.size(); ++s) {
    for (size_t m = 0; m < modes.size(); ++m) {
      dat << fmt::format("# {}, {}\n", sas[s], mode_name(modes[m]));
      for (const Result& r : results)
        if (r.sa == sas[s] && r.mode.cache == modes[m].cache && r.mode.mpr == modes[m].mpr)
          dat << fmt::format("{} {}\n", r.nodes, r.j.value("seconds", 0.0));
      dat << "\n\n";
      // Colour per SA, dash type per mode.
      plot +=
          fmt::format("{}'{}/storm.dat' index {} with linespoints lc {} dt {} pt {} title '{}, {}'",
                      index == 0 ? "plot " : ", \\\n     ", out_dir, index, s + 1, m + 1, m + 4,
                      sas[s], mode_name(modes[m]));
      ++index;
    }
  }
  dat.close();
  std::ofstream gp(out_dir + "/storm.gp");
  gp << fmt::format(
      "set terminal pngcairo size 1100,720\nset output '{}/storm.png'\n"
      "set title 'Job-start storm: {} ranks x {} peers per node (ibsim, one client)'\n"
      "set xlabel 'nodes'\nset ylabel 'time until every rank has its paths (s)'\n"
      "set logscale y\nset grid\nset key below vertical maxrows {} font ',9'\n{}\n",
      out_dir, ranks, peers, modes.size(), plot);
  gp.close();
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    int rc = std::system(("gnuplot '" + out_dir + "/storm.gp'").c_str());
    fmt::print("plot: {}/storm.png{}\n", out_dir, rc == 0 ? "" : " (gnuplot failed)");
  } else {
    fmt::print("plot script: {}/storm.gp (gnuplot not installed)\n", out_dir);
  }
  return status;
}
