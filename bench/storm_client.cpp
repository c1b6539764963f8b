// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The PathRecord storm of an MPI job start, sent by one client on behalf of every rank: N nodes
// x R ranks, each rank resolving paths to P peer nodes: the node's next P nodes for every rank
// (--pattern stencil, a halo exchange) or P nodes at random per rank (--pattern random).
// Without a host-side path cache every rank asks for each of its peers; with one (--cache) a
// node asks once per distinct peer, whatever its ranks. Run at a fabric node with umad2sim
// preloaded; prints one JSON line.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <set>

#include "rdma-qos/sa-client/client.h"

using namespace rdmaqos::sa;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"Job-start PathRecord storm against a live SA"};
  int nodes = 100, ranks = 4, peers = 16, first_lid = 2;
  size_t window = 32;
  bool cache = false;
  unsigned seed = 1;
  std::string pattern = "stencil";
  app.add_option("--nodes", nodes, "compute nodes (LIDs first-lid .. first-lid + nodes - 1)");
  app.add_option("--first-lid", first_lid, "LID of the first compute node");
  app.add_option("--ranks", ranks, "ranks per node");
  app.add_option("--peers", peers, "peer nodes each rank resolves");
  app.add_option("--window", window, "queries outstanding at once");
  app.add_flag("--cache", cache, "a per-node path cache: one query per distinct (node, peer)");
  app.add_option("--seed", seed, "random peer choice");
  app.add_option("--pattern", pattern, "stencil (next P nodes) or random")
      ->check(CLI::IsMember({"stencil", "random"}));
  CLI11_PARSE(app, argc, argv);
  if (nodes < 2 || ranks < 1 || peers < 1) {
    std::cerr << "need at least 2 nodes, 1 rank and 1 peer\n";
    return 2;
  }

  std::mt19937 rng(seed);
  std::vector<PathQuery> batch;
  for (int n = 0; n < nodes; ++n) {
    std::set<int> asked;  // this node's distinct peers (what its cache holds)
    for (int r = 0; r < ranks; ++r) {
      for (int p = 0; p < peers; ++p) {
        int peer = 0;
        if (pattern == "stencil") {
          peer = (n + 1 + p % (nodes - 1)) % nodes;
        } else {
          peer = static_cast<int>(rng() % static_cast<unsigned>(nodes - 1));
          if (peer >= n) ++peer;
        }
        if (cache && !asked.insert(peer).second) continue;
        PathQuery q;
        q.record.slid = static_cast<uint16_t>(first_lid + n);
        q.record.dlid = static_cast<uint16_t>(first_lid + peer);
        q.comp_mask = pr_mask::kSlid | pr_mask::kDlid;
        q.get_table = false;  // one path, as ib_sa and the rdma_cm ask
        batch.push_back(q);
      }
    }
  }

  ClientOptions o;
  o.window = window;
  o.timeout = std::chrono::milliseconds(1000);
  auto client = Client::open(o);
  if (!client) {
    std::cerr << client.error().message << "\n";
    return 1;
  }
  std::vector<double> latencies_us;
  latencies_us.reserve(batch.size());
  (*client)->set_latency_observer([&](std::chrono::nanoseconds d) {
    latencies_us.push_back(static_cast<double>(d.count()) / 1000.0);
  });
  auto start = Clock::now();
  auto results = (*client)->path_records(batch);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  size_t failed = static_cast<size_t>(
      std::count_if(results.begin(), results.end(), [](auto& r) { return !r.ok(); }));
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    if (latencies_us.empty()) return 0.0;
    return latencies_us[std::min(
        latencies_us.size() - 1,
        static_cast<size_t>(p * static_cast<double>(latencies_us.size())))];
  };
  std::cout << nlohmann::json{{"nodes", nodes},
                              {"ranks", ranks},
                              {"peers", peers},
                              {"cache", cache},
                              {"queries", batch.size()},
                              {"failed", failed},
                              {"seconds", seconds},
                              {"qps", static_cast<double>(batch.size()) / seconds},
                              {"p50_us", pct(0.50)},
                              {"p99_us", pct(0.99)}}
                   .dump()
            << std::endl;
  return failed == 0 ? 0 : 1;
}
