// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Load for the reload-under-load test: PathRecord Gets from this node to --dlid with window 16
// and no retries, alternating a Service-ID query (expected SL --sl-sid) and a plain one
// (expected SL --sl-plain), until --stop-file exists or --seconds pass. Every query must be
// answered (a timeout is a dropped query) with the expected SL. Prints one JSON line of counts.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "rdma-qos/sa-client/client.h"

int main(int argc, char** argv) {
  CLI::App app{"sad_load"};
  uint16_t dlid = 0;
  uint64_t service_id = 0x1060CBC;
  int sl_sid = 0, sl_plain = 0;
  double seconds = 60;
  std::string stop_file;
  size_t window = 16;
  app.add_option("--dlid", dlid)->required();
  app.add_option("--service-id", service_id);
  app.add_option("--sl-sid", sl_sid)->required();
  app.add_option("--sl-plain", sl_plain)->required();
  app.add_option("--seconds", seconds);
  app.add_option("--stop-file", stop_file);
  app.add_option("--window", window);
  CLI11_PARSE(app, argc, argv);

  namespace sa = rdmaqos::sa;
  sa::ClientOptions options;
  options.window = window;
  options.retries = 0;  // a lost answer must show, not be hidden by a resend
  options.timeout = std::chrono::milliseconds(3000);
  auto client = sa::Client::open(options);
  if (!client) {
    std::cerr << "sad_load: " << client.error().message << "\n";
    return 2;
  }
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
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline &&
         (stop_file.empty() || !std::filesystem::exists(stop_file))) {
    auto results = (*client)->path_records(batch);
    for (size_t i = 0; i < results.size(); ++i) {
      ++queries;
      const auto& r = results[i];
      if (!r) {
        ++failed;
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
  }
  std::cout << nlohmann::json{{"queries", queries},
                              {"answered", answered},
                              {"wrong", wrong},
                              {"failed", failed},
                              {"errors", errors}}
                   .dump()
            << std::endl;
  return 0;
}
