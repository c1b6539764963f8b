// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The PathRecord storm of an MPI job start, sent by one client on behalf of every rank: N nodes
// x R ranks, each rank resolving paths to P peer nodes: the node's next P nodes for every rank
// (--pattern stencil, a halo exchange) or P nodes at random per rank (--pattern random).
// Without a host-side path cache every rank asks for each of its peers; with one (--cache) a
// node asks once per distinct peer, whatever its ranks. With --mpr B the peers go B at a time
// into one MultiPathRecord (the node's GID to B peer GIDs, NumbPath B), so a query brings
// B paths: without RMPP (umad2sim) an answer holds what fits in one MAD. Run at a fabric node
// with umad2sim preloaded; prints one JSON line.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/sa-client/client.h"

using namespace rdmaqos::sa;
using rdmaqos::Result;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"Job-start PathRecord storm against a live SA"};
  int nodes = 100, ranks = 4, peers = 16, first_lid = 2;
  size_t window = 32;
  bool cache = false;
  unsigned seed = 1;
  std::string pattern = "stencil";
  size_t mpr = 0;
  std::string guid_file;
  rdmaqos::add_number(app, "--nodes", nodes,
                      "compute nodes (LIDs first-lid .. first-lid + nodes - 1)");
  rdmaqos::add_number(app, "--first-lid", first_lid, "LID of the first compute node");
  rdmaqos::add_number(app, "--ranks", ranks, "ranks per node");
  rdmaqos::add_number(app, "--peers", peers, "peer nodes each rank resolves");
  rdmaqos::add_number(app, "--window", window, "queries outstanding at once");
  app.add_flag("--cache", cache, "a per-node path cache: one query per distinct (node, peer)");
  rdmaqos::add_number(app, "--seed", seed, "random peer choice");
  app.add_option("--pattern", pattern, "stencil (next P nodes) or random")
      ->check(CLI::IsMember({"stencil", "random"}));
  rdmaqos::add_number(app, "--mpr", mpr,
                      "peers per MultiPathRecord (0: one PathRecord Get per peer)");
  app.add_option("--port-guids", guid_file,
                 "port GUIDs of the compute nodes, one a line in LID order (for --mpr)");
  CLI11_PARSE(app, argc, argv);
  if (nodes < 2 || ranks < 1 || peers < 1) {
    std::cerr << "need at least 2 nodes, 1 rank and 1 peer\n";
    return 2;
  }
  std::vector<uint64_t> guids;
  if (mpr > 0) {
    std::ifstream in(guid_file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) guids.push_back(std::stoull(line, nullptr, 16));
    if (guids.size() < static_cast<size_t>(nodes)) {
      std::cerr << "--mpr needs --port-guids with " << nodes << " GUIDs\n";
      return 2;
    }
  }
  auto gid_of = [&](int node) { return make_gid(0xfe80000000000000ULL, guids[node]); };

  std::mt19937 rng(seed);
  std::vector<PathQuery> batch;
  std::vector<SaRequest> mpr_requests;
  std::vector<std::vector<uint16_t>> mpr_dlids;  // per MultiPathRecord: the LIDs it asks for
  size_t paths_asked = 0;
  auto add_mpr = [&](int n, const std::vector<int>& to) {
    for (size_t i = 0; i < to.size(); i += mpr) {
      MultiPathQuery q;
      q.record.sgids = {gid_of(n)};
      std::vector<uint16_t> dlids;
      for (size_t j = i; j < std::min(to.size(), i + mpr); ++j) {
        q.record.dgids.push_back(gid_of(to[j]));
        dlids.push_back(static_cast<uint16_t>(first_lid + to[j]));
      }
      q.record.numb_path = static_cast<uint8_t>(dlids.size());
      q.comp_mask = mpr_mask::kNumbPath;
      auto request = make_multipath_request(q);
      if (!request) {
        std::cerr << request.error().message << "\n";
        std::exit(2);
      }
      mpr_requests.push_back(*request);
      mpr_dlids.push_back(std::move(dlids));
    }
  };
  for (int n = 0; n < nodes; ++n) {
    std::set<int> asked;          // this node's distinct peers (what its cache holds)
    std::vector<int> node_peers;  // with --cache --mpr: batched per node, not per rank
    for (int r = 0; r < ranks; ++r) {
      std::vector<int> rank_peers;
      for (int p = 0; p < peers; ++p) {
        int peer = 0;
        if (pattern == "stencil") {
          peer = (n + 1 + p % (nodes - 1)) % nodes;
        } else {
          peer = static_cast<int>(rng() % static_cast<unsigned>(nodes - 1));
          if (peer >= n) ++peer;
        }
        if (cache && !asked.insert(peer).second) continue;
        ++paths_asked;
        if (mpr > 0) {
          (cache ? node_peers : rank_peers).push_back(peer);
          continue;
        }
        PathQuery q;
        q.record.slid = static_cast<uint16_t>(first_lid + n);
        q.record.dlid = static_cast<uint16_t>(first_lid + peer);
        q.comp_mask = pr_mask::kSlid | pr_mask::kDlid;
        q.get_table = false;  // one path, as ib_sa and the rdma_cm ask
        batch.push_back(q);
      }
      if (!rank_peers.empty()) add_mpr(n, rank_peers);
    }
    if (!node_peers.empty()) add_mpr(n, node_peers);
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
  // Paths received intact: with --mpr an answer must hold one path to each LID it asked for (a
  // record cut or garbled on the way has a wrong DLID).
  size_t failed = 0, paths = 0, missing = 0;
  auto start = Clock::now();
  if (mpr == 0) {
    auto results = (*client)->path_records(batch);
    for (const auto& r : results) r.ok() ? ++paths : ++failed;
  } else {
    auto results = (*client)->execute(mpr_requests);
    for (size_t i = 0; i < results.size(); ++i) {
      auto records = results[i] ? decode_path_response(*results[i])
                                : Result<std::vector<PathRecord>>(results[i].error());
      if (!records) {
        ++failed;
        missing += mpr_dlids[i].size();
        continue;
      }
      std::map<uint16_t, int> wanted;
      for (uint16_t d : mpr_dlids[i]) ++wanted[d];
      for (const PathRecord& p : *records)
        if (auto it = wanted.find(p.dlid); it != wanted.end() && it->second > 0) --it->second;
      size_t lost = 0;
      for (const auto& [d, left] : wanted) lost += static_cast<size_t>(left);
      missing += lost;
      paths += mpr_dlids[i].size() - lost;
    }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const size_t queries = mpr == 0 ? batch.size() : mpr_requests.size();
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
                              {"mpr", mpr},
                              {"queries", queries},
                              {"paths_asked", paths_asked},
                              {"paths", paths},
                              {"missing", missing},
                              {"failed", failed},
                              {"seconds", seconds},
                              {"qps", static_cast<double>(queries) / seconds},
                              {"p50_us", pct(0.50)},
                              {"p99_us", pct(0.99)}}
                   .dump()
            << std::endl;
  return failed == 0 && missing == 0 ? 0 : 1;
}
