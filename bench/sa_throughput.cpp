// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sa-throughput: PathRecord queries per second of four SAs side by side on the same ibsim
// fabric, in one run: OpenSM's SA enforcing a policy, rdma-qos-sad enforcing the same policy
// at the SM's port once OpenSM has configured the fabric and stopped, sa-null-responder
// (a canned record: the transport limit), and OpenSM with the rdma-qos OpenSM plugin (the policy
// given to the plugin only, on a fabric of its own, measured in rounds taking turns with OpenSM
// alone). Policies of several sizes are generated with a mix of Service-ID, QoS-Class and
// port-group rules; the queries carry the Service-ID of the last rule, so OpenSM's first-match
// scan reads every rule. One client (sa-client-bench at node001), windows 1 and 16, the best of a
// few rounds each. With --flap, a spine uplink is taken down and up through ibsim's console all
// through the OpenSM and plugin rounds, so OpenSM runs heavy sweeps while it answers. Prints a
// table (or JSON) with the ratios ours/null and ours/OpenSM; the table also gives the plugin's
// rate at each size over OpenSM alone's at the smallest size ("plugin/OpenSM@10"): OpenSM's own
// MAD path, the ceiling for any answer given inside OpenSM.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/testbed/ib_fabric.h"

namespace {

using namespace rdmaqos::testbed;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr uint64_t kSidBase = 0x10000000;
constexpr uint64_t kGuidRangeBase = 0x0002c90310000000;

uint64_t rule_sid(int i) {
  return kSidBase + static_cast<uint64_t>(i) * 16;
}

// A policy of `rules` match rules: 50% single Service-IDs, 20% Service-ID ranges with a
// QoS-Class, 20% Service-IDs between source and destination port groups, 10% QoS-Class only;
// the last rule is a plain Service-ID (what the benchmark queries ask for). Port groups (one
// per 20 rules, 2 to 1000) list fabric port GUIDs, GUID ranges or node descriptions.
std::string make_policy(int rules, const Topology& topo) {
  std::vector<const TopoNode*> cas = topo.cas();
  const int groups = std::clamp(rules / 20, 2, 1000);
  std::string out = "port-groups\n";
  for (int g = 0; g < groups; ++g) {
    const TopoNode& a = *cas[static_cast<size_t>(g) % cas.size()];
    const TopoNode& b = *cas[static_cast<size_t>(g + 3) % cas.size()];
    out += fmt::format("  port-group\n    name: G{}\n", g);
    switch (g % 3) {
      case 0:
        out += fmt::format("    port-guid: 0x{:016x}, 0x{:016x}\n", a.port_guid, b.port_guid);
        break;
      case 1: {
        uint64_t base = kGuidRangeBase + static_cast<uint64_t>(g) * 16;
        out += fmt::format("    port-guid: 0x{:016x}-0x{:016x}\n", base, base + 15);
        break;
      }
      default: out += fmt::format("    port-name: \"{}/P1\"\n", a.description); break;
    }
    out += "  end-port-group\n";
  }
  out += "end-port-groups\n\nqos-levels\n";
  out += "  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\n";
  for (int l = 1; l < 16; ++l) {
    out += fmt::format("  qos-level\n    name: L{}\n    sl: {}\n", l, l);
    if (l % 3 == 0) out += fmt::format("    rate-limit: {}\n", 2 + l % 5);
    if (l % 4 == 0) out += "    mtu-limit: 3\n";
    if (l % 5 == 0) out += fmt::format("    packet-life: {}\n", 8 + l % 8);
    out += "  end-qos-level\n";
  }
  out += "end-qos-levels\n\nqos-match-rules\n";
  for (int i = 0; i < rules; ++i) {
    out += "  qos-match-rule\n";
    const int kind = i == rules - 1 ? 0 : i % 10;
    const uint64_t sid = rule_sid(i);
    if (kind < 5) {
      out += fmt::format("    service-id: 0x{:X}\n", sid);
    } else if (kind < 7) {
      out += fmt::format("    service-id: 0x{:X}-0x{:X}\n", sid, sid + 7);
      out += fmt::format("    qos-class: {}\n", 1 + i % 4000);
    } else if (kind < 9) {
      out += fmt::format("    source: G{}\n", i % groups);
      out += fmt::format("    destination: G{}\n", (i / 7) % groups);
      out += fmt::format("    service-id: 0x{:X}\n", sid);
    } else {
      out += fmt::format("    qos-class: {}\n", 1 + i % 4000);
    }
    out += fmt::format("    qos-level-name: L{}\n  end-qos-match-rule\n", 1 + i % 15);
  }
  out += "end-qos-match-rules\n";
  return out;
}

struct Measure {
  double qps = 0;
  size_t failed = 0;
  int queries = 0;
};

struct Options {
  std::vector<int> sizes = {10, 2000, 20000, 100000};
  std::vector<int> windows = {1, 16};
  int queries = 20000;
  int opensm_max_rules = 20000;
  int opensm_min_queries = 1000;
  int rounds = 3;
  std::string sad, null_responder, client;
  std::string plugin_dir;  // the directory of librdma-qos-opensm.so; empty: no plugin column
  std::string client_node = "node001";
  int flap_ms =
      0;  // > 0: leaf01's first uplink goes down and up every flap_ms during OpenSM rounds
};

// Flaps leaf01's uplink to spine01 through ibsim's console while alive: each change sends trap
// 128, and OpenSM runs a heavy sweep (discovery, LIDs, routing) that holds its lock. The CAs stay
// reachable through spine02, so every query still has an answer. Counts OpenSM's sweeps (its
// "SUBNET UP" lines) while it ran.
class Flapper {
 public:
  Flapper(const IbFabric& fabric, int period_ms) : fabric_(fabric) {
    if (period_ms <= 0) return;
    sweeps_before_ = sweeps();
    thread_ = std::thread([this, period_ms] {
      const int uplink = 2 + 4;  // make_fat_tree({}): ports 2..5 CAs, then one per spine
      bool down = false;
      int before = 0;
      while (!stop_) {
        before = sweeps();
        fabric_.ibsim_command(fmt::format("{} \"leaf01\"[{}]", down ? "ReLink" : "Unlink", uplink));
        down = !down;
        std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
      }
      // Up again, and swept after the last change, so the fabric is whole for what runs next.
      if (down) {
        before = sweeps();
        fabric_.ibsim_command(fmt::format("ReLink \"leaf01\"[{}]", uplink));
      }
      for (int i = 0; i < 200 && sweeps() == before; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the sweep's last SMPs
    });
  }
  ~Flapper() { stop(); }
  // Stops flapping; the heavy sweeps OpenSM finished meanwhile.
  int stop() {
    if (!thread_.joinable()) return 0;
    stop_ = true;
    thread_.join();
    return sweeps() - sweeps_before_;
  }

 private:
  int sweeps() const {
    const std::string log = fabric_.opensm_log();
    int n = 0;
    for (size_t at = log.find("SUBNET UP"); at != std::string::npos;
         at = log.find("SUBNET UP", at + 1))
      ++n;
    return n;
  }
  const IbFabric& fabric_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  int sweeps_before_ = 0;
};

// sa-client-bench at the client node against whatever answers at the SM LID.
std::map<int, Measure> measure(const IbFabric& fabric, const Options& o, int queries,
                               uint64_t sid) {
  std::string windows;
  for (int w : o.windows) windows += (windows.empty() ? "" : ",") + std::to_string(w);
  std::string dlids;
  for (const TopoNode* n : fabric.topology().cas())
    if (n->id != o.client_node) dlids += (dlids.empty() ? "" : ",") + std::to_string(n->lid);
  RunResult r = fabric.run_at(o.client_node,
                              {o.client, "--queries", std::to_string(queries), "--windows", windows,
                               "--service-id", fmt::format("0x{:X}", sid), "--dlids", dlids},
                              std::chrono::minutes(30));
  std::map<int, Measure> out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    out[j.at("window").get<int>()] = {j.at("qps").get<double>(), j.at("failed").get<size_t>(),
                                      j.at("queries").get<int>()};
  }
  if (r.exit_code != 0 || out.size() != o.windows.size())
    throw std::runtime_error(
        fmt::format("sa-client-bench failed (exit {}):\n{}", r.exit_code, r.output));
  return out;
}

// Starts an SA of ours at the SM's port and waits until it answers ClassPortInfo.
std::unique_ptr<Process> start_sa(const IbFabric& fabric, std::vector<std::string> argv,
                                  const std::string& log, double* startup_s) {
  ProcessOptions p;
  p.argv = std::move(argv);
  p.env = fabric.client_env(fabric.topology().sm_node().id);
  p.cwd = fabric.dir();
  p.output_path = fabric.dir() + "/" + log;
  auto start = Clock::now();
  auto sa = std::make_unique<Process>(Process::spawn(p));
  for (int i = 0; i < 1200; ++i) {
    if (!sa->running()) break;
    RunResult probe = fabric.run_at("node001", {"saquery", "-c"});
    if (probe.exit_code == 0) {
      *startup_s = std::chrono::duration<double>(Clock::now() - start).count();
      return sa;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ifstream in(p.output_path);
  throw std::runtime_error(fmt::format("{} did not come up (exit {}):\n{}", p.argv[0],
                                       sa->wait_for(std::chrono::milliseconds(100)).value_or(-1),
                                       std::string(std::istreambuf_iterator<char>(in), {})));
}

// OpenSM with the plugin on a fabric of its own, the policy given to the plugin only; returns
// once the plugin answers. `startup_s`: until then.
std::unique_ptr<IbFabric> start_plugin_fabric(const Options& o, const std::string& policy,
                                              double* startup_s) {
  IbFabricOptions fo = fabric_options(make_fat_tree({}));
  fo.files["plugin-policy.conf"] = policy;
  fo.opensm_conf =
      "force_log_flush TRUE\nevent_plugin_name rdma-qos-opensm\n"
      "event_plugin_options policy=@DIR@/plugin-policy.conf control-socket=@DIR@/plugin.sock\n";
  fo.opensm_env["LD_LIBRARY_PATH"] = o.plugin_dir;
  fo.ibsim_console = o.flap_ms > 0;
  fo.start_timeout = std::chrono::minutes(30);
  auto start = Clock::now();
  auto fabric = std::make_unique<IbFabric>(fo);
  for (int i = 0; i < 18000; ++i) {
    const std::string log = fabric->opensm_log();
    if (log.find("cannot load plugin") != std::string::npos) break;
    if (log.find("rdma-qos plugin: answering") != std::string::npos) {
      *startup_s = std::chrono::duration<double>(Clock::now() - start).count();
      return fabric;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the plugin did not answer:\n" + fabric->opensm_log());
}

std::string cell(const std::optional<double>& v, const char* f = "{:.0f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PathRecord throughput of OpenSM, rdma-qos-sad and a null responder on ibsim",
               "sa-throughput"};
  Options o;
  bool as_json = false;
  rdmaqos::add_number(app, "--sizes", o.sizes, "policy sizes (match rules)")->delimiter(',');
  rdmaqos::add_number(app, "--windows", o.windows, "sa-client windows")->delimiter(',');
  rdmaqos::add_number(app, "--queries", o.queries,
                      "queries per window for rdma-qos-sad and the null "
                      "responder")
      ->capture_default_str();
  rdmaqos::add_number(app, "--opensm-max-rules", o.opensm_max_rules,
                      "largest policy OpenSM is measured with (it loads 100k rules in minutes); "
                      "larger ones run OpenSM without a policy just to configure the fabric")
      ->capture_default_str();
  rdmaqos::add_number(app, "--opensm-min-queries", o.opensm_min_queries,
                      "OpenSM gets queries * 2000 / rules queries per window, at least this many")
      ->capture_default_str();
  rdmaqos::add_number(app, "--rounds", o.rounds,
                      "measurements per SA and window (the best is kept)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sad", o.sad, "rdma-qos-sad")->required();
  app.add_option("--null-responder", o.null_responder, "sa-null-responder")->required();
  app.add_option("--client", o.client, "sa-client-bench")->required();
  app.add_option("--plugin-dir", o.plugin_dir,
                 "directory of librdma-qos-opensm.so: adds OpenSM with the plugin");
  rdmaqos::add_number(
      app, "--flap", o.flap_ms,
      "take a spine uplink down and up every N ms through ibsim's console during the "
      "OpenSM and plugin rounds (OpenSM sweeps while it answers); 0: no flapping")
      ->capture_default_str();
  app.add_flag("--json", as_json, "print JSON lines instead of the table");
  CLI11_PARSE(app, argc, argv);

  // The programs run with the fabric's directory as working directory.
  for (std::string* path : {&o.sad, &o.null_responder, &o.client})
    *path = std::filesystem::absolute(*path).string();
  if (!o.plugin_dir.empty()) o.plugin_dir = std::filesystem::absolute(o.plugin_dir).string();
  json rows = json::array();
  int failures = 0;
  try {
    for (int rules : o.sizes) {
      IbFabricOptions fo = fabric_options(make_fat_tree({}));
      const std::string policy = make_policy(rules, fo.topology);
      const bool with_opensm = rules <= o.opensm_max_rules;
      if (with_opensm) fo.policy = policy;
      fo.ibsim_console = o.flap_ms > 0;
      fo.start_timeout = std::chrono::minutes(30);
      std::cerr << fmt::format("{} rules: starting ibsim and OpenSM{} ...\n", rules,
                               with_opensm ? " with the policy" : " without a policy");
      auto t0 = Clock::now();
      IbFabric fabric(fo);
      double opensm_start = std::chrono::duration<double>(Clock::now() - t0).count();
      const uint64_t sid = rule_sid(rules - 1);
      std::map<int, Measure> opensm, ours, null;
      // The best of `rounds` measurements per window (the machine is shared: the best is the
      // least disturbed), failures summed; ours and the null responder alternate.
      auto keep_best = [](std::map<int, Measure>& best, const std::map<int, Measure>& m) {
        for (const auto& [w, x] : m) {
          Measure& b = best[w];
          size_t failed = b.failed + x.failed;
          if (x.qps > b.qps) b = x;
          b.failed = failed;
        }
      };
      // OpenSM with the plugin runs on a fabric of its own from the start, so its rounds take
      // turns with OpenSM alone's: both see the same load from the rest of the machine.
      std::map<int, Measure> plugin;
      double plugin_start = 0;
      std::unique_ptr<IbFabric> pf;
      if (!o.plugin_dir.empty()) {
        pf = start_plugin_fabric(o, policy, &plugin_start);
        std::cerr << fmt::format("  OpenSM + plugin answering in {:.1f} s\n", plugin_start);
      }
      int opensm_sweeps = 0, plugin_sweeps = 0;
      auto plugin_round = [&] {
        Flapper flap(*pf, o.flap_ms);
        keep_best(plugin, measure(*pf, o, o.queries, sid));
        plugin_sweeps += flap.stop();
      };
      if (with_opensm) {
        int q = std::max(o.opensm_min_queries, static_cast<int>(static_cast<long long>(o.queries) *
                                                                2000 / std::max(rules, 2000)));
        std::cerr << fmt::format("  OpenSM{}: {} queries per window, {} rounds\n",
                                 pf ? " and OpenSM + plugin in turns" : "", q, o.rounds);
        for (int r = 0; r < o.rounds; ++r) {
          {
            Flapper flap(fabric, o.flap_ms);
            keep_best(opensm, measure(fabric, o, q, sid));
            opensm_sweeps += flap.stop();
          }
          if (pf) plugin_round();
        }
      } else if (pf) {
        for (int r = 0; r < o.rounds; ++r) plugin_round();
      }
      pf.reset();
      fabric.stop_sm();

      std::string policy_path = fabric.dir() + "/bench-policy.conf";
      std::ofstream(policy_path) << policy;
      double sad_start = 0, null_start = 0;
      // Not while flapping: the link changes are OpenSM's to sweep, and with OpenSM stopped
      // rdma-qos-sad would answer for a fabric no SM keeps.
      const int sad_rounds = o.flap_ms > 0 ? 0 : o.rounds;
      for (int r = 0; r < sad_rounds; ++r) {
        {
          auto sad = start_sa(fabric, {o.sad, "--foreground", "--policy", policy_path}, "sad.log",
                              &sad_start);
          std::cerr << fmt::format(
              "  round {}: rdma-qos-sad up in {:.1f} s, {} queries per window\n", r + 1, sad_start,
              o.queries);
          keep_best(ours, measure(fabric, o, o.queries, sid));
          sad->stop();
        }
        {
          auto nr = start_sa(fabric, {o.null_responder}, "null.log", &null_start);
          std::cerr << fmt::format("  round {}: null responder\n", r + 1);
          keep_best(null, measure(fabric, o, o.queries, sid));
          nr->stop();
        }
      }
      for (int w : o.windows) {
        json row = {{"rules", rules},
                    {"window", w},
                    {"failed", ours[w].failed + null[w].failed},
                    {"sad_start_s", sad_start},
                    {"opensm_start_s", opensm_start}};
        if (sad_rounds > 0) {
          row["ours_qps"] = ours[w].qps;
          row["null_qps"] = null[w].qps;
          row["ours_over_null"] = ours[w].qps / null[w].qps;
          row["ours_failed"] = ours[w].failed;
          row["null_failed"] = null[w].failed;
        }
        if (with_opensm) {
          row["opensm_qps"] = opensm[w].qps;
          if (sad_rounds > 0) row["ours_over_opensm"] = ours[w].qps / opensm[w].qps;
          row["opensm_failed"] = opensm[w].failed;
          if (o.flap_ms > 0) row["opensm_sweeps"] = opensm_sweeps;
          row["failed"] = row["failed"].get<size_t>() + opensm[w].failed;
        }
        if (!o.plugin_dir.empty()) {
          row["plugin_qps"] = plugin[w].qps;
          if (sad_rounds > 0) row["plugin_over_null"] = plugin[w].qps / null[w].qps;
          row["plugin_failed"] = plugin[w].failed;
          if (o.flap_ms > 0) row["plugin_sweeps"] = plugin_sweeps;
          row["plugin_start_s"] = plugin_start;
          row["failed"] = row["failed"].get<size_t>() + plugin[w].failed;
          if (with_opensm) row["plugin_over_opensm"] = plugin[w].qps / opensm[w].qps;
        }
        if (row["failed"].get<size_t>() != 0) ++failures;
        if (as_json) std::cout << row.dump() << std::endl;
        rows.push_back(row);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "sa-throughput: " << e.what() << "\n";
    return 2;
  }
  if (!as_json) {
    auto get = [](const json& r, const char* k) -> std::optional<double> {
      if (!r.contains(k)) return std::nullopt;
      return r[k].get<double>();
    };
    // OpenSM alone at the smallest size measured with it, per window: OpenSM's own MAD path,
    // the ceiling for any answer given inside OpenSM (the plugin's included), whatever the
    // policy's size.
    std::map<int, std::pair<int, double>> opensm_smallest;  // window -> (rules, q/s)
    for (const json& r : rows) {
      auto q = get(r, "opensm_qps");
      if (!q) continue;
      auto [it, fresh] =
          opensm_smallest.try_emplace(r["window"].get<int>(), r["rules"].get<int>(), *q);
      if (!fresh && r["rules"].get<int>() < it->second.first)
        it->second = {r["rules"].get<int>(), *q};
    }
    std::string ceiling_header = "plugin/OpenSM@min";
    if (!opensm_smallest.empty())
      ceiling_header = fmt::format("plugin/OpenSM@{}", opensm_smallest.begin()->second.first);
    auto over_ceiling = [&](const json& r) -> std::optional<double> {
      auto q = get(r, "plugin_qps");
      auto it = opensm_smallest.find(r["window"].get<int>());
      if (!q || it == opensm_smallest.end() || it->second.second <= 0) return std::nullopt;
      return *q / it->second.second;
    };
    std::cout << fmt::format(
        "| {:>7} | {:>6} | {:>10} | {:>12} | {:>8} | {:>13} | {:>9} | {:>11} | {:>11} | {:>13} "
        "| {:>17} | {:>6} |\n",
        "rules", "window", "OpenSM q/s", "rdma-qos-sad", "null q/s", "OpenSM+plugin", "ours/null",
        "ours/OpenSM", "plugin/null", "plugin/OpenSM", ceiling_header, "failed");
    std::cout << "|--------:|-------:|-----------:|-------------:|---------:|--------------:|"
                 "----------:|------------:|------------:|--------------:|------------------:|"
                 "-------:|\n";
    for (const json& r : rows) {
      std::cout << fmt::format(
          "| {:>7} | {:>6} | {:>10} | {:>12} | {:>8} | {:>13} | {:>9} | {:>11} | {:>11} | "
          "{:>13} | {:>17} | {:>6} |\n",
          r["rules"].get<int>(), r["window"].get<int>(), cell(get(r, "opensm_qps")),
          cell(get(r, "ours_qps")), cell(get(r, "null_qps")), cell(get(r, "plugin_qps")),
          cell(get(r, "ours_over_null"), "{:.2f}"), cell(get(r, "ours_over_opensm"), "{:.1f}x"),
          cell(get(r, "plugin_over_null"), "{:.2f}"), cell(get(r, "plugin_over_opensm"), "{:.2f}x"),
          cell(over_ceiling(r), "{:.2f}"), r["failed"].get<size_t>());
    }
    std::cout << "\nstart-up (s): ";
    for (const json& r : rows)
      if (r["window"] == o.windows.front())
        std::cout << fmt::format(
            "{} rules: OpenSM+ibsim {:.1f}, rdma-qos-sad {:.1f}{}; ", r["rules"].get<int>(),
            r["opensm_start_s"].get<double>(), r["sad_start_s"].get<double>(),
            r.contains("plugin_start_s")
                ? fmt::format(", OpenSM+plugin {:.1f}", r["plugin_start_s"].get<double>())
                : std::string());
    std::cout << "\n";
    if (o.flap_ms > 0) {
      std::cout << "heavy sweeps during the measured rounds (uplink flapped every " << o.flap_ms
                << " ms): ";
      for (const json& r : rows)
        if (r["window"] == o.windows.front())
          std::cout << fmt::format("{} rules: OpenSM {}, OpenSM+plugin {}; ", r["rules"].get<int>(),
                                   r.value("opensm_sweeps", 0), r.value("plugin_sweeps", 0));
      std::cout << "\n";
    }
  }
  return failures == 0 ? 0 : 1;
}
