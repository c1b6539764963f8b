// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's answer threads inside OpenSM: requests naming no end (every path of a fat tree
// with LMC 2, 40 LIDs, more than the 1,024 LID pairs answered on OpenSM's dispatcher thread)
// are computed on the plugin's own thread and answered exactly as OpenSM's own handler answers
// them (the plugin paused); with answer-threads=0 they stay on OpenSM's thread.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "plugin_fabric.h"
#include "rdma-qos/testbed/raw_mad.h"

namespace rdmaqos::osmp {
namespace {

using testbed::IbFabric;
using testing::control;

// A PathRecord Get (OpenSM answers the first path it finds, walking every destination and
// every source for each) and GetTable (cut to one MAD: umad2sim has no RMPP, for OpenSM as for
// the plugin) naming no end, as sa-raw-mad sends them.
std::vector<std::string> whole_fabric_queries() {
  std::vector<std::string> out;
  for (uint8_t method : {testbed::raw::kGet, testbed::raw::kGetTable})
    out.push_back(testbed::raw::sa_mad(method, testbed::raw::kPathRecord, 0).hex());
  return out;
}

// sa-raw-mad's JSON line for `mad` sent from node001.
nlohmann::json ask(const IbFabric& f, const std::string& mad) {
  auto r = f.run_at("node001", {RDMA_QOS_SA_RAW_MAD, mad});
  for (size_t at = 0; at < r.output.size();) {
    size_t end = r.output.find('\n', at);
    if (end == std::string::npos) end = r.output.size();
    if (r.output[at] == '{')
      return nlohmann::json::parse(r.output.substr(at, end - at), nullptr, false);
    at = end + 1;
  }
  return nlohmann::json();
}

std::vector<nlohmann::json> ask_all(const IbFabric& f) {
  std::vector<nlohmann::json> out;
  for (const std::string& mad : whole_fabric_queries()) out.push_back(ask(f, mad));
  return out;
}

class PluginAnswerThreads : public ::testing::TestWithParam<const char*> {};

TEST_P(PluginAnswerThreads, AnswerTheWholeFabricsPathsAsOpenSmsOwnHandler) {
  const std::string threads = GetParam();
  testbed::FatTreeSpec tree;
  tree.lmc = 2;
  IbFabric f(testing::plugin_fabric_options("policy=none answer-threads=" + threads, tree));
  ASSERT_TRUE(testing::wait_for_log(f, testing::kAnswering)) << f.opensm_log();

  const std::vector<nlohmann::json> plugin = ask_all(f);
  nlohmann::json stats = control(f, "stats");
  ASSERT_TRUE(stats.is_object()) << stats.dump();
  EXPECT_EQ(stats["workers"]["deferred"].get<int>(), threads == "0" ? 0 : 2) << stats.dump();
  EXPECT_EQ(stats["plugin"]["fallbacks"].get<int>(), 0) << stats.dump();

  ASSERT_EQ(control(f, "pause")["ok"], true);
  const std::vector<nlohmann::json> opensm = ask_all(f);
  ASSERT_EQ(control(f, "resume")["ok"], true);

  ASSERT_EQ(plugin.size(), opensm.size());
  for (size_t i = 0; i < plugin.size(); ++i) {
    ASSERT_TRUE(opensm[i].is_object()) << opensm[i].dump();
    EXPECT_EQ(plugin[i], opensm[i]) << whole_fabric_queries()[i];
  }
  for (const nlohmann::json& answer : opensm) EXPECT_EQ(answer["status"], "0x0000");
}

INSTANTIATE_TEST_SUITE_P(Threads, PluginAnswerThreads, ::testing::Values("2", "0"),
                         [](const auto& param_info) {
                           return std::string("threads_") + param_info.param;
                         });

}  // namespace
}  // namespace rdmaqos::osmp
