// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Load clients for rdma-qos-sad on ibsim (sa-client, run at a fabric node); each prints one JSON
// line of counts.
// - Default (the reload-under-load test): PathRecord Gets from this node to --dlid with window
//   16 and no retries, alternating a Service-ID query (expected SL --sl-sid) and a plain one
//   (expected SL --sl-plain), until --stop-file exists or --seconds pass. Every query must be
//   answered (a timeout is a dropped query) with the expected SL.
// - --latency N (the mixed-load test and bench): N plain Gets to --dlid one at a time (fewer
//   when --seconds pass first), each timed from send to answer: p50, p99 and the largest, in
//   microseconds.
// - --tables (the other half of the mixed load): open-ended PathRecord GetTables (no end named:
//   every path of the fabric) one after another until --stop-file or --seconds, counted by
//   outcome: answered with records, ERR_NO_RESOURCES (a bound), BUSY, other errors, timeouts.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/sa-client/client.h"

namespace {

namespace sa = rdmaqos::sa;
using Clock = std::chrono::steady_clock;

bool stop_requested(const std::string& stop_file, Clock::time_point deadline) {
  return Clock::now() >= deadline || (!stop_file.empty() && std::filesystem::exists(stop_file));
}

// After a query (or a batch) that failed at once without an answer: a send fails without waiting
// when the simulator is gone, and sending again at once would spin on the cores the test shares
// with the daemon it measures. A failure that took its timeout has waited already; an answer with
// an error status is the SA's, and the load goes on.
void pause_after_instant_failure(Clock::time_point sent) {
  using namespace std::chrono_literals;
  if (Clock::now() - sent < 1ms) std::this_thread::sleep_for(10ms);
}

// The value at fraction `q` of sorted `v` (nearest rank); 0 for none.
double quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size()));
  return v[std::min(i, v.size() - 1)];
}

int latency(sa::Client& client, uint16_t dlid, int count, Clock::time_point deadline) {
  sa::PathQuery q;
  q.get_table = false;
  q.record.slid = client.port().lid;
  q.record.dlid = dlid;
  q.comp_mask = sa::pr_mask::kSlid | sa::pr_mask::kDlid;
  client.class_port_info().ignore_error();  // asked once before the first query: not timed
  std::vector<double> us;
  uint64_t failed = 0;
  nlohmann::json errors = nlohmann::json::array();
  int sent_count = 0;
  const auto start = Clock::now();
  for (; sent_count < count && Clock::now() < deadline; ++sent_count) {
    const auto sent = Clock::now();
    auto r = client.path_records(q);
    const double took = std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
    if (!r || r->size() != 1) {
      ++failed;
      if (errors.size() < 10) errors.push_back(r ? "not one record" : r.error().message);
      if (!r && r.error().code != rdmaqos::ErrorCode::kMadStatus) pause_after_instant_failure(sent);
      continue;
    }
    us.push_back(took);
  }
  std::sort(us.begin(), us.end());
  std::cout << nlohmann::json{{"queries", sent_count},
                              {"answered", us.size()},
                              {"failed", failed},
                              {"p50_us", quantile(us, 0.50)},
                              {"p99_us", quantile(us, 0.99)},
                              {"max_us", us.empty() ? 0.0 : us.back()},
                              {"seconds",
                               std::chrono::duration<double>(Clock::now() - start).count()},
                              {"errors", errors}}
                   .dump()
            << std::endl;
  return 0;
}

int tables(sa::Client& client, const std::string& stop_file, Clock::time_point deadline) {
  sa::PathQuery q;  // no component: every source and destination
  q.get_table = true;
  client.class_port_info().ignore_error();
  uint64_t sent = 0, records = 0, no_resources = 0, busy = 0, timeouts = 0, other = 0;
  double slowest_ms = 0;
  nlohmann::json errors = nlohmann::json::array();
  while (!stop_requested(stop_file, deadline)) {
    ++sent;
    const auto start = Clock::now();
    auto r = client.path_records(q);
    slowest_ms = std::max(slowest_ms,
                          std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (r) {
      ++records;
      continue;
    }
    const auto& e = r.error();
    if (e.code == rdmaqos::ErrorCode::kMadStatus &&
        sa::sa_status_code(e.mad_status) == sa::status::kNoResources) {
      ++no_resources;
    } else if (e.code == rdmaqos::ErrorCode::kMadStatus && (e.mad_status & sa::status::kBusy)) {
      ++busy;
    } else if (e.code == rdmaqos::ErrorCode::kTimeout) {
      ++timeouts;
    } else {
      ++other;
      if (errors.size() < 10) errors.push_back(e.message);
      if (e.code != rdmaqos::ErrorCode::kMadStatus) pause_after_instant_failure(start);
    }
  }
  std::cout << nlohmann::json{{"tables", sent},
                              {"records", records},
                              {"no_resources", no_resources},
                              {"busy", busy},
                              {"timeouts", timeouts},
                              {"other", other},
                              {"slowest_ms", slowest_ms},
                              {"errors", errors}}
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sad_load"};
  uint16_t dlid = 0;
  uint64_t service_id = 0x1060CBC;
  int sl_sid = 0, sl_plain = 0;
  double seconds = 60;
  std::string stop_file;
  size_t window = 16;
  int latency_count = 0;
  bool table_mode = false;
  int timeout_ms = 3000;
  rdmaqos::add_number(app, "--dlid", dlid);
  rdmaqos::add_number(app, "--service-id", service_id);
  rdmaqos::add_number(app, "--sl-sid", sl_sid);
  rdmaqos::add_number(app, "--sl-plain", sl_plain);
  app.add_option("--seconds", seconds);
  app.add_option("--stop-file", stop_file);
  rdmaqos::add_number(app, "--window", window);
  rdmaqos::add_number(app, "--latency", latency_count,
                      "time this many Gets to --dlid, one at a time");
  app.add_flag("--tables", table_mode, "send open-ended PathRecord GetTables one at a time");
  rdmaqos::add_number(app, "--timeout-ms", timeout_ms, "per-query timeout (no retries)");
  CLI11_PARSE(app, argc, argv);
  if (!table_mode && dlid == 0) {
    std::cerr << "sad_load: --dlid is required\n";
    return 2;
  }

  sa::ClientOptions options;
  options.window = latency_count > 0 || table_mode ? 1 : window;
  options.retries = 0;  // a lost answer must show, not be hidden by a resend
  options.timeout = std::chrono::milliseconds(timeout_ms);
  auto client = sa::Client::open(options);
  if (!client) {
    std::cerr << "sad_load: " << client.error().message << "\n";
    return 2;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  if (latency_count > 0) return latency(**client, dlid, latency_count, deadline);
  if (table_mode) return tables(**client, stop_file, deadline);

  const uint16_t slid = (*client)->port().lid;
  std::vector<sa::PathQuery> batch;
  for (size_t i = 0; i < 64; ++i) {
    sa::PathQuery q;
    q.get_table = false;
    q.record.slid = slid;
    q.record.dlid = dlid;
    q.comp_mask = sa::pr_mask::kSlid | sa::pr_mask::kDlid;
    if (i % 2 == 0) {
      q.record.service_id = service_id;
      q.comp_mask |= sa::pr_mask::kServiceId;
    }
    batch.push_back(q);
  }
  uint64_t queries = 0, answered = 0, wrong = 0, failed = 0;
  nlohmann::json errors = nlohmann::json::array();
  while (!stop_requested(stop_file, deadline)) {
    const auto sent = Clock::now();
    auto results = (*client)->path_records(batch);
    size_t batch_failed = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      ++queries;
      const auto& r = results[i];
      if (!r) {
        ++failed;
        ++batch_failed;
        if (errors.size() < 10) errors.push_back(r.error().message);
        continue;
      }
      ++answered;
      int expected = i % 2 == 0 ? sl_sid : sl_plain;
      if (r->size() != 1 || (*r)[0].sl != expected) {
        ++wrong;
        if (errors.size() < 10)
          errors.push_back(fmt::format("query {}: {} records, SL {} (expected {})", i, r->size(),
                                       r->empty() ? -1 : (*r)[0].sl, expected));
      }
    }
    if (batch_failed == results.size()) pause_after_instant_failure(sent);
  }
  std::cout << nlohmann::json{{"queries", queries},
                              {"answered", answered},
                              {"failed", failed},
                              {"wrong", wrong},
                              {"errors", errors}}
                   .dump()
            << std::endl;
  return 0;
}
