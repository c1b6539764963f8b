// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The job-start storm through the preload module itself, against OpenSM on ibsim: K real nodes,
// each an rdma-qos-lsd serving its path socket, each running R rank processes (storm_rank over
// the stand-in librdmacm with the module preloaded) that resolve routes to P peers at once.
// ibsim serves at most 10 umad clients, so the rest of the job (the other N - K nodes) is
// storm-client sending their queries at the same moment, as storm_bench models a whole job.
// Two rounds on one fabric: the node's shared path cache, then every program asking for itself
// (rdma-qos-lsd --no-path-sharing, the SA load of per-process clients). Prints a table, the
// ratios side by side, and one JSON line; exits 1 when a route did not come from the SA or a
// node asked the SA more than once for a (destination, class).
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "storm_common.h"

namespace tb = rdmaqos::testbed;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Programs {
  std::string lsd, preload, rank, cli, client;
};

struct Job {
  int nodes = 1000, real = 4, ranks = 32, peers = 100, port = 4791;
  size_t window = 32;
};

struct Round {
  bool shared = true;
  double seconds = 0;       // spawn of the first rank to the last rank's and the rest's exit
  double real_seconds = 0;  // the slowest rank's own resolve time
  double rest_seconds = 0;  // storm-client's, for the other nodes
  long real_queries = 0;    // PathRecords the real nodes' services sent the SA
  long rest_queries = 0;
  long routes = 0, sa_paths = 0, kernel_routes = 0, errors = 0, failed_ranks = 0;
  bool rest_ok = true;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class Storm {
 public:
  Storm(tb::IbFabric& fabric, Programs programs, Job job)
      : fabric_(fabric), p_(std::move(programs)), job_(job) {
    const auto cas = fabric_.topology().cas();
    std::ofstream guids(fabric_.dir() + "/guids.txt");
    for (const tb::TopoNode* ca : cas) guids << fmt::format("{:x}\n", ca->port_guid);
    for (int k = 0; k < job_.real; ++k) {
      real_.push_back(cas[static_cast<size_t>(k)]->id);
      std::istringstream(fabric_.run_at(real_.back(), {"ibstat", "-l"}).output) >>
          device_[real_.back()];
    }
    if (static_cast<int>(cas.size()) > job_.real) rest_node_ = cas[static_cast<size_t>(job_.real)];
    std::ofstream(fabric_.dir() + "/empty.conf").flush();
  }

  Round run(bool shared) {
    Round r;
    r.shared = shared;
    const std::string tag = shared ? "shared" : "own";
    std::vector<std::unique_ptr<tb::Process>> lsds;
    for (const std::string& node : real_) {
      tb::ProcessOptions o;
      o.argv = {p_.lsd,          "--foreground",  "--no-kernel",
                "--path-socket", sock(node, tag), "--control-socket",
                ctl(node, tag),  "--log-level",   "info"};
      if (!shared) o.argv.push_back("--no-path-sharing");
      o.env = fabric_.client_env(node);
      o.env["RDMA_QOS_CONFIG"] = fabric_.dir() + "/empty.conf";
      o.cwd = fabric_.dir();
      o.output_path = fabric_.dir() + "/lsd-" + node + "-" + tag + ".log";
      lsds.push_back(std::make_unique<tb::Process>(tb::Process::spawn(o)));
    }
    for (const std::string& node : real_)
      for (int i = 0; i < 200 && access(sock(node, tag).c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(50ms);

    const auto start = Clock::now();
    std::unique_ptr<tb::Process> rest;
    const std::string rest_out = fabric_.dir() + "/rest-" + tag + ".out";
    if (rest_node_ && !p_.client.empty()) {
      tb::ProcessOptions o;
      o.argv = {p_.client,
                "--nodes",
                std::to_string(job_.nodes - job_.real),
                "--ranks",
                std::to_string(job_.ranks),
                "--peers",
                std::to_string(job_.peers),
                "--window",
                std::to_string(job_.window),
                "--first-lid",
                std::to_string(rest_node_->lid)};
      if (shared) o.argv.push_back("--cache");
      o.env = fabric_.client_env(rest_node_->id);
      o.cwd = fabric_.dir();
      o.output_path = rest_out;
      rest = std::make_unique<tb::Process>(tb::Process::spawn(o));
    }
    struct Rank {
      std::unique_ptr<tb::Process> process;
      std::string out;
    };
    std::vector<Rank> ranks;
    for (int k = 0; k < job_.real; ++k) {
      const std::string& node = real_[static_cast<size_t>(k)];
      for (int i = 0; i < job_.ranks; ++i) {
        tb::ProcessOptions o;
        o.argv = {"env",
                  "-u",
                  "LD_PRELOAD",
                  "LD_PRELOAD=" + p_.preload,
                  "FAKE_RDMACM_DEVICE=" + device_[node],
                  "FAKE_RDMACM_SGUID=" + std::to_string(fabric_.port_guid(node)),
                  "FAKE_RDMACM_GUIDS=" + fabric_.dir() + "/guids.txt",
                  "RDMA_QOS_CONFIG=" + fabric_.dir() + "/empty.conf",
                  "RDMA_QOS_SA=on",
                  "RDMA_QOS_PATH_SERVICE=" + sock(node, tag),
                  p_.rank,
                  std::to_string(job_.port),
                  std::to_string(job_.peers),
                  std::to_string(k + 1),
                  std::to_string(job_.nodes),
                  "30000"};
        o.cwd = fabric_.dir();
        o.output_path = fmt::format("{}/rank-{}-{}-{}.out", fabric_.dir(), tag, node, i);
        ranks.push_back({std::make_unique<tb::Process>(tb::Process::spawn(o)), o.output_path});
      }
    }
    for (Rank& rank : ranks) {
      const int code = rank.process->wait_for(3600s).value_or(-1);
      const json j = rdmaqos::bench::json_line(read_file(rank.out));
      if (code != 0 || !j.is_object()) {
        ++r.failed_ranks;
        if (r.failed_ranks == 1)
          fmt::print(stderr, "a rank failed (exit {}): {}\n", code, read_file(rank.out));
      }
      if (!j.is_object()) continue;
      r.routes += j.value("routes", 0);
      r.sa_paths += j.value("sa_paths", 0);
      r.kernel_routes += j.value("kernel_routes", 0);
      r.errors += j.value("errors", 0);
      r.real_seconds = std::max(r.real_seconds, j.value("seconds", 0.0));
    }
    if (rest) {
      const int code = rest->wait_for(7200s).value_or(-1);
      const json j = rdmaqos::bench::json_line(read_file(rest_out));
      r.rest_ok = code == 0 && j.is_object();
      if (!r.rest_ok) fmt::print(stderr, "storm-client: exit {}: {}\n", code, read_file(rest_out));
      if (j.is_object()) {
        r.rest_queries = j.value("queries", 0L);
        r.rest_seconds = j.value("seconds", 0.0);
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (const std::string& node : real_) {
      tb::ProcessOptions o;
      o.argv = {p_.cli, "kernel", "stats", "--json", "--socket", ctl(node, tag)};
      auto s = tb::run(o, 30s);
      const json j = json::parse(s.output, nullptr, false);
      const auto at = "/path_service/sa_requests/path_record"_json_pointer;
      if (j.is_object() && j.contains(at))
        r.real_queries += j[at].get<long>();
      else
        fmt::print(stderr, "{}: no counters: {}\n", node, s.output);
    }
    for (auto& l : lsds) l->stop();
    return r;
  }

 private:
  std::string sock(const std::string& node, const std::string& tag) const {
    return fmt::format("{}/paths-{}-{}.sock", fabric_.dir(), node, tag);
  }
  std::string ctl(const std::string& node, const std::string& tag) const {
    return fmt::format("{}/lsd-{}-{}.sock", fabric_.dir(), node, tag);
  }

  tb::IbFabric& fabric_;
  Programs p_;
  Job job_;
  std::vector<std::string> real_;
  std::map<std::string, std::string> device_;
  const tb::TopoNode* rest_node_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Job-start storm through the preload module: per-node path cache against "
      "per-process queries, on OpenSM and ibsim"};
  Programs p;
  Job job;
  double min_speedup = 0;
  app.add_option("--lsd", p.lsd, "the rdma-qos-lsd binary")->required();
  app.add_option("--preload", p.preload, "the preload module (librdma-qos-preload.so)")->required();
  app.add_option("--rank", p.rank, "the storm rank program (over the stand-in librdmacm)")
      ->required();
  app.add_option("--cli", p.cli, "the rdma-qos binary (reads lsd's counters)")->required();
  app.add_option("--client", p.client,
                 "storm-client: sends the other nodes' queries (none: the real nodes alone)");
  rdmaqos::add_number(app, "--nodes", job.nodes, "compute nodes of the job (and the fabric)");
  rdmaqos::add_number(app, "--real-nodes", job.real,
                      "nodes that run rdma-qos-lsd and rank processes (ibsim: at most 8)")
      ->check(CLI::Range(1, 8));
  rdmaqos::add_number(app, "--ranks", job.ranks, "rank processes per node");
  rdmaqos::add_number(app, "--peers", job.peers, "peers each rank resolves (the next P nodes)");
  rdmaqos::add_number(app, "--port", job.port, "the Service-ID port the ranks connect to");
  rdmaqos::add_number(app, "--window", job.window, "storm-client's queries outstanding");
  app.add_option("--min-speedup", min_speedup,
                 "exit 1 unless per-process time / per-node time reaches this");
  CLI11_PARSE(app, argc, argv);
  if (job.nodes <= job.real || job.peers >= job.nodes) {
    fmt::print(stderr, "need more nodes than real nodes and than peers\n");
    return 2;
  }
  for (std::string* s : {&p.lsd, &p.preload, &p.rank, &p.cli, &p.client})
    if (!s->empty()) *s = std::filesystem::absolute(*s).string();

  tb::IbFabric fabric(rdmaqos::bench::storm_fat_tree(job.nodes));
  Storm storm(fabric, p, job);
  fmt::print("job: {} nodes x {} ranks x {} peers; {} real nodes through the module, the rest {}\n",
             job.nodes, job.ranks, job.peers, job.real,
             p.client.empty() ? "idle" : "from storm-client");
  std::fflush(stdout);
  const Round node = storm.run(true);
  const Round own = storm.run(false);

  const long distinct = static_cast<long>(job.real) * job.peers;  // (node, peer, class)
  const long expected = static_cast<long>(job.real) * job.ranks * job.peers;
  fmt::print("{:>12} {:>9} {:>9} {:>9} {:>7} {:>11} {:>11} {:>10} {:>10}\n", "round", "routes",
             "SA paths", "kernel", "errors", "real q", "rest q", "real (s)", "job (s)");
  for (const Round* r : {&node, &own})
    fmt::print("{:>12} {:>9} {:>9} {:>9} {:>7} {:>11} {:>11} {:>10.2f} {:>10.2f}\n",
               r->shared ? "per node" : "per process", r->routes, r->sa_paths, r->kernel_routes,
               r->errors, r->real_queries, r->rest_queries, r->real_seconds, r->seconds);
  const double speedup = node.seconds > 0 ? own.seconds / node.seconds : 0;
  const double query_ratio = node.real_queries + node.rest_queries > 0
                                 ? static_cast<double>(own.real_queries + own.rest_queries) /
                                       static_cast<double>(node.real_queries + node.rest_queries)
                                 : 0;
  fmt::print(
      "per-node cache: {} SA queries for {} (node, destination, class) of the real nodes; "
      "job {:.1f}x faster, {:.1f}x fewer queries than per-process\n",
      node.real_queries, distinct, speedup, query_ratio);
  json out = {{"nodes", job.nodes},
              {"real_nodes", job.real},
              {"ranks", job.ranks},
              {"peers", job.peers},
              {"distinct_per_node_dest_class", distinct}};
  for (const Round* r : {&node, &own})
    out[r->shared ? "per_node" : "per_process"] = {{"routes", r->routes},
                                                   {"sa_paths", r->sa_paths},
                                                   {"kernel_routes", r->kernel_routes},
                                                   {"errors", r->errors},
                                                   {"real_queries", r->real_queries},
                                                   {"rest_queries", r->rest_queries},
                                                   {"real_seconds", r->real_seconds},
                                                   {"rest_seconds", r->rest_seconds},
                                                   {"seconds", r->seconds}};
  out["speedup"] = speedup;
  out["query_ratio"] = query_ratio;
  fmt::print("{}\n", out.dump());

  int status = 0;
  for (const Round* r : {&node, &own}) {
    if (r->sa_paths != expected || r->routes != expected || r->failed_ranks > 0 || !r->rest_ok) {
      fmt::print(stderr, "{}: {} of {} routes from the SA ({} resolved, {} ranks failed)\n",
                 r->shared ? "per node" : "per process", r->sa_paths, expected, r->routes,
                 r->failed_ranks);
      status = 1;
    }
  }
  if (node.real_queries > distinct) {
    fmt::print(stderr, "the real nodes asked the SA {} times for {} (node, destination, class)\n",
               node.real_queries, distinct);
    status = 1;
  }
  if (own.real_queries < expected) {  // retries may add to it
    fmt::print(stderr, "per process: {} SA queries for {} routes\n", own.real_queries, expected);
    status = 1;
  }
  if (min_speedup > 0 && speedup < min_speedup) {
    fmt::print(stderr, "speedup {:.1f}x is below {:.1f}x\n", speedup, min_speedup);
    status = 1;
  }
  return status;
}
