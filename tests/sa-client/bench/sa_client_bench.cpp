// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Queries per second and latency percentiles of the SA client against a live SA, for several
// window sizes (window 1 is the saquery-style one-at-a-time loop). Run at a fabric node with
// umad2sim preloaded; prints one JSON object per window size.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/sa-client/client.h"

using namespace rdmaqos::sa;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"SA client throughput and latency against a live SA"};
  int queries = 5000;
  std::vector<size_t> windows = {1, 2, 4, 8, 16, 32, 64};
  std::vector<uint16_t> dlids = {3, 4, 5};
  uint64_t service_id = 0x1060CBC;
  int timeout_ms = 1000;
  rdmaqos::add_number(app, "--queries", queries, "queries per window size")->capture_default_str();
  rdmaqos::add_number(app, "--windows", windows, "window sizes")->delimiter(',');
  rdmaqos::add_number(app, "--dlids", dlids, "destination LIDs, used in turn")->delimiter(',');
  rdmaqos::add_number(app, "--service-id", service_id, "Service ID in every query");
  rdmaqos::add_number(app, "--timeout", timeout_ms, "per-attempt timeout (ms)");
  CLI11_PARSE(app, argc, argv);

  ClientOptions o;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  for (size_t window : windows) {
    o.window = window;
    auto client = Client::open(o);
    if (!client) {
      std::cerr << client.error().message << "\n";
      return 1;
    }
    std::vector<double> latencies_us;
    latencies_us.reserve(static_cast<size_t>(queries));
    (*client)->set_latency_observer([&](std::chrono::nanoseconds d) {
      latencies_us.push_back(static_cast<double>(d.count()) / 1000.0);
    });
    std::vector<PathQuery> batch;
    for (int i = 0; i < queries; ++i) {
      PathQuery q;
      q.record.slid = (*client)->port().lid;
      q.record.dlid = dlids[static_cast<size_t>(i) % dlids.size()];
      q.record.service_id = service_id;
      q.comp_mask = pr_mask::kSlid | pr_mask::kDlid | pr_mask::kServiceId;
      batch.push_back(q);
    }
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
    std::cout << nlohmann::json{{"window", window},
                                {"queries", queries},
                                {"failed", failed},
                                {"qps", static_cast<double>(queries) / seconds},
                                {"p50_us", pct(0.50)},
                                {"p90_us", pct(0.90)},
                                {"p99_us", pct(0.99)}}
                     .dump()
              << std::endl;
  }
  return 0;
}
