// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sad-mixed-load: plain PathRecord Gets timed while another client sends open-ended GetTables
// (every path of the fabric), against rdma-qos-sad on ibsim, in one run for each mode asked:
//   before  --answer-threads 0 --max-records 0 --answer-time-limit 0: every answer on the one
//           receiving thread, no bound (rdma-qos-sad as it was, and OpenSM's behaviour);
//   workers --max-records 0 --answer-time-limit 0: large answers on worker threads, unbounded
//           (what the workers alone do: every table computed whole);
//   after   the defaults: large answers on worker threads, bounded in records and time.
// OpenSM configures a fat tree (--cas CAs, LMC --lmc) and stops; rdma-qos-sad takes over the
// SM's port. Per mode: sad_load --latency at node001 times --gets Gets to node002 alone, then
// again while sad_load --tables at node003 sends GetTables one after another; the SA's stats
// say how its answers went. Prints a table (and --json a JSON line). With --check (the
// `opensm` test), fails unless in the "after" mode every Get is answered, the Gets' p99 under
// the table load stays below --bound-ms (a generous bound, far above the transport's
// round trip: the test is about answers held up by a table, not about speed), and the tables
// went to the workers.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace {

using nlohmann::json;
using namespace rdmaqos::testbed;
using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The last JSON object line of a client's output.
json last_json(const std::string& output) {
  json j;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') j = json::parse(line, nullptr, false);
  return j.is_object() ? j : json();
}

struct Mode {
  std::string name;
  std::vector<std::string> sad_args;
};

struct Options {
  std::string sad, load;
  int cas = 128, cas_per_leaf = 16, lmc = 2, gets = 2000;
  std::vector<std::string> modes = {"before", "after"};
  bool check = false, print_json = false;
  double bound_ms = 250;
  int phase_seconds = 60;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Get latency alone and under open-ended GetTables, rdma-qos-sad on ibsim",
               "sad-mixed-load"};
  Options o;
  app.add_option("--sad", o.sad, "rdma-qos-sad")->required();
  app.add_option("--load", o.load, "sad_load")->required();
  rdmaqos::add_number(app, "--cas", o.cas, "compute CAs")->capture_default_str();
  rdmaqos::add_number(app, "--cas-per-leaf", o.cas_per_leaf)->capture_default_str();
  rdmaqos::add_number(app, "--lmc", o.lmc, "LIDs per CA port: 2^LMC")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  rdmaqos::add_number(app, "--gets", o.gets, "Gets timed per phase")->capture_default_str();
  app.add_option("--modes", o.modes, "before, workers, after")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--check", o.check, "fail unless the after mode keeps Gets within --bound-ms");
  app.add_option("--bound-ms", o.bound_ms, "p99 of Gets under the table load (--check)")
      ->capture_default_str();
  rdmaqos::add_number(app, "--phase-seconds", o.phase_seconds,
                      "longest a timing phase runs (fewer Gets then)")
      ->capture_default_str();
  app.add_flag("--json", o.print_json, "also print the results as one JSON line");
  CLI11_PARSE(app, argc, argv);
  o.sad = std::filesystem::absolute(o.sad).string();
  o.load = std::filesystem::absolute(o.load).string();

  const std::map<std::string, Mode> known = {
      {"before",
       {"before", {"--answer-threads", "0", "--max-records", "0", "--answer-time-limit", "0"}}},
      {"workers", {"workers", {"--max-records", "0", "--answer-time-limit", "0"}}},
      {"after", {"after", {}}},
  };
  try {
    FatTreeSpec spec;
    spec.cas = o.cas;
    spec.cas_per_leaf = o.cas_per_leaf;
    spec.lmc = o.lmc;
    IbFabricOptions fo = fabric_options(make_fat_tree(spec));
    fo.lmc = o.lmc;
    fo.start_timeout = 300s;
    IbFabric fabric(fo);
    fabric.stop_sm();
    const std::string dlid = fabric.lid_arg("node002");
    std::cout << fmt::format(
        "fabric: {} CAs, LMC {}; Gets node001 -> node002, GetTables from "
        "node003\n",
        o.cas, o.lmc);

    json results = json::object();
    bool ok = true;
    for (const std::string& name : o.modes) {
      auto mode = known.find(name);
      if (mode == known.end()) throw std::runtime_error("unknown mode " + name);
      const std::string socket = fabric.dir() + "/sad-" + name + ".sock";
      ProcessOptions p;
      p.argv = {o.sad, "--foreground",     "--no-policy", "--rediscover-interval",
                "0",   "--control-socket", socket};
      p.argv.insert(p.argv.end(), mode->second.sad_args.begin(), mode->second.sad_args.end());
      p.env = fabric.client_env(fabric.topology().sm_node().id);
      p.cwd = fabric.dir();
      p.output_path = fabric.dir() + "/sad-" + name + ".log";
      auto started = fabric.start_until_answering(p, {"saquery", "-c"}, 180s);
      if (started.probe.exit_code != 0)
        throw std::runtime_error("rdma-qos-sad did not come up:\n" + slurp(p.output_path));

      auto latency = [&](const std::string& phase) {
        RunResult r =
            fabric.run_at("node001",
                          {o.load, "--latency", std::to_string(o.gets), "--dlid", dlid,
                           "--timeout-ms", "5000", "--seconds", std::to_string(o.phase_seconds)},
                          std::chrono::seconds(o.phase_seconds + 60));
        json j = last_json(r.output);
        if (r.exit_code != 0 || j.is_null())
          throw std::runtime_error(
              fmt::format("{} {}: latency client failed:\n{}", name, phase, r.output));
        return j;
      };
      json alone = latency("alone");

      const std::string stop = fabric.dir() + "/stop-tables";
      std::filesystem::remove(stop);
      ProcessOptions tp;
      tp.argv = {o.load,      "--tables", "--stop-file",  stop,
                 "--seconds", "600",      "--timeout-ms", "30000"};
      tp.env = fabric.client_env("node003");
      tp.cwd = fabric.dir();
      tp.output_path = fabric.dir() + "/tables-" + name + ".log";
      Process tables = Process::spawn(tp);
      std::this_thread::sleep_for(1s);  // the first table under way
      json loaded = latency("under tables");
      std::ofstream(stop) << "stop\n";
      auto rc = tables.wait_for(120s);
      json t = last_json(slurp(tp.output_path));
      if (rc.value_or(-1) != 0 || t.is_null())
        throw std::runtime_error(
            fmt::format("{}: table client failed:\n{}", name, slurp(tp.output_path)));
      auto stats = rdmaqos::sad::control_call(socket, {{"command", "stats"}}, 10s);
      json s = stats && (*stats).value("ok", false) ? (*stats)["stats"] : json::object();
      started.daemon->stop();
      results[name] = {{"alone", alone}, {"under_tables", loaded}, {"tables", t}, {"sa", s}};

      if (o.check && name == "after") {
        auto fail = [&](const std::string& why) {
          std::cout << "FAIL (" << name << "): " << why << "\n";
          ok = false;
        };
        if (alone["failed"] != 0 || loaded["failed"] != 0) fail("Gets not answered");
        if (loaded["answered"].get<int>() < o.gets) fail("fewer Gets than asked within the phase");
        if (loaded["p99_us"].get<double>() > o.bound_ms * 1000)
          fail(fmt::format("Get p99 under the table load {:.1f} ms > {} ms",
                           loaded["p99_us"].get<double>() / 1000, o.bound_ms));
        if (t["tables"].get<int>() < 2 || t["timeouts"] != 0 || t["other"] != 0)
          fail("the table client's GetTables were not all answered (records or a bound)");
        if (s.value("workers", json::object()).value("deferred", 0) < 1)
          fail("no answer went to a worker");
        if (!ok) std::cout << "rdma-qos-sad log:\n" << slurp(p.output_path);
      }
    }

    std::cout << fmt::format(
        "{:<7} | {:>10} {:>10} | {:>5} {:>7} {:>10} {:>10} {:>10} | {:>6} {:>7} "
        "{:>7} {:>5} {:>9}\n",
        "mode", "alone p50", "p99", "gets", "in", "loaded p50", "p99", "max", "tables", "records",
        "no_res", "busy", "slowest");
    for (const auto& [name, r] : results.items()) {
      auto ms = [](const json& j, const char* k) { return j[k].get<double>() / 1000; };
      const json& a = r["alone"];
      const json& l = r["under_tables"];
      const json& t = r["tables"];
      std::cout << fmt::format(
          "{:<7} | {:>8.3f}ms {:>8.3f}ms | {:>5} {:>6.1f}s {:>8.3f}ms {:>8.3f}ms {:>8.1f}ms | "
          "{:>6} "
          "{:>7} {:>7} {:>5} {:>7.0f}ms\n",
          name, ms(a, "p50_us"), ms(a, "p99_us"), l["answered"].get<int>(), l.value("seconds", 0.0),
          ms(l, "p50_us"), ms(l, "p99_us"), ms(l, "max_us"), t["tables"].get<int>(),
          t["records"].get<int>(), t["no_resources"].get<int>(), t["busy"].get<int>(),
          t["slowest_ms"].get<double>());
    }
    if (o.print_json) std::cout << results.dump() << "\n";
    if (o.check) std::cout << (ok ? "PASS\n" : "FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sad-mixed-load: " << e.what() << "\n";
    return 2;
  }
}
