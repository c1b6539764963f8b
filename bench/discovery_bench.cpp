// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Fabric discovery at scale, side by side in one run on the same ibsim fat trees: OpenSM's first
// sweep and a heavy re-sweep (SIGHUP) against rdma-qos-sad's discovery (--dump-fabric, the
// whole model with PKey, SL2VL and LFT tables). Prints one table row per fabric size.
#include <fmt/format.h>
#include <signal.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"

namespace tb = rdmaqos::testbed;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// OpenSM's log line time of day ("Nov 24 11:48:05 261623 [..] ...") in seconds.
std::optional<double> log_time(const std::string& line) {
  int h = 0, m = 0, s = 0;
  long us = 0;
  if (std::sscanf(line.c_str(), "%*s %*d %d:%d:%d %ld", &h, &m, &s, &us) != 4) return std::nullopt;
  return h * 3600.0 + m * 60.0 + s + static_cast<double>(us) / 1e6;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

struct Row {
  int cas = 0;
  size_t nodes = 0;
  double fabric_up = 0, opensm_first = 0, opensm_resweep = 0;
  std::vector<double> ours;
  size_t endpoints = 0;
};

Row measure(int cas, const std::string& sad, int runs) {
  Row row;
  row.cas = cas;
  tb::FatTreeSpec spec;
  spec.cas = cas;
  spec.cas_per_leaf = 32;
  spec.spines = 4;
  tb::IbFabricOptions o = tb::fabric_options(tb::make_fat_tree(spec));
  o.opensm_conf = "force_log_flush TRUE\n";  // the log lines are the sweep's timestamps
  o.start_timeout = 900s;
  row.nodes = o.topology.nodes.size();
  auto t0 = Clock::now();
  tb::IbFabric fabric(o);
  row.fabric_up = seconds_since(t0);

  // First sweep: from DISCOVERING to the first SUBNET UP, by OpenSM's own clock.
  const std::string log = fabric.opensm_log();
  auto discovering = lines_with(log, "Entering DISCOVERING state");
  auto up = lines_with(log, "SUBNET UP");
  if (!discovering.empty() && !up.empty()) {
    row.opensm_first = log_time(up.front()).value_or(0) - log_time(discovering.front()).value_or(0);
  }
  // A heavy re-sweep: SIGHUP, until the next SUBNET UP.
  const size_t ups = up.size();
  const pid_t opensm = fabric.pids().back();
  auto t1 = Clock::now();
  kill(opensm, SIGHUP);
  while (lines_with(fabric.opensm_log(), "SUBNET UP").size() <= ups && seconds_since(t1) < 600) {
    std::this_thread::sleep_for(2ms);
  }
  row.opensm_resweep = seconds_since(t1);

  for (int r = 0; r < runs; ++r) {
    auto t2 = Clock::now();
    tb::RunResult res =
        fabric.run_at(fabric.topology().sm_node().id, {sad, "--dump-fabric", "--json"}, 600s);
    double took = seconds_since(t2);
    if (res.exit_code != 0) {
      fmt::print(stderr, "rdma-qos-sad --dump-fabric failed ({}):\n{}\n", res.exit_code,
                 res.output.substr(0, 2000));
      continue;
    }
    row.ours.push_back(took);
    auto start = res.output.find('{');
    auto j = nlohmann::json::parse(res.output.substr(start == std::string::npos ? 0 : start),
                                   nullptr, false);
    if (j.is_object() && j.contains("paths")) row.endpoints = j["paths"].size();
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Discovery time of rdma-qos-sad next to OpenSM's sweeps on ibsim fat trees"};
  std::string sad;
  std::vector<int> sizes = {300, 1000, 1980};
  int runs = 3;
  app.add_option("--sad", sad, "the rdma-qos-sad binary")->required();
  app.add_option("--cas", sizes, "fabric sizes (compute CAs; 32 per leaf, 4 spines)")
      ->delimiter(',');
  app.add_option("--runs", runs, "discoveries per size (the median is shown)");
  CLI11_PARSE(app, argc, argv);
  sad = std::filesystem::absolute(sad).string();  // clients run inside the fabric's directory

  fmt::print("{:>6} {:>6} {:>10} {:>14} {:>15} {:>14} {:>10}\n", "CAs", "nodes", "fabric up",
             "OpenSM sweep", "OpenSM resweep", "ours (median)", "endpoints");
  for (int cas : sizes) {
    try {
      Row r = measure(cas, sad, runs);
      std::sort(r.ours.begin(), r.ours.end());
      double median = r.ours.empty() ? 0 : r.ours[r.ours.size() / 2];
      fmt::print("{:>6} {:>6} {:>9.2f}s {:>13.2f}s {:>14.2f}s {:>13.2f}s {:>10}\n", r.cas, r.nodes,
                 r.fabric_up, r.opensm_first, r.opensm_resweep, median, r.endpoints);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{} CAs: {}\n", cas, e.what());
      return 1;
    }
  }
  fmt::print(
      "ours: rdma-qos-sad --dump-fabric --json at sm01 (process start, discovery of every table,\n"
      "JSON output); target: < 5 s at the largest fabric\n");
  return 0;
}
