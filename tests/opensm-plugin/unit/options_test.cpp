// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's options: OpenSM's event_plugin_options words and the config file they may name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "rdma-qos/opensm-plugin/options.h"

namespace rdmaqos::osmp {
namespace {

TEST(PluginOptions, NoOptionsMeanDefaults) {
  OptionsResult r = parse_options("");
  EXPECT_TRUE(r.errors.empty());
  EXPECT_FALSE(r.options.policy);
  EXPECT_FALSE(r.options.no_policy);
  EXPECT_EQ(r.options.control_socket, "/run/rdma-qos/opensm-plugin.sock");
}

TEST(PluginOptions, KeysTakeValuesSeparatedBySpacesOrCommas) {
  OptionsResult r =
      parse_options("policy=/etc/p.conf,partitions=/etc/parts.conf  control_socket=none");
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.options.policy, "/etc/p.conf");
  EXPECT_EQ(r.options.partitions, "/etc/parts.conf");
  EXPECT_EQ(r.options.control_socket, "");
}

TEST(PluginOptions, PolicyNoneMeansPartitionSlsOnly) {
  OptionsResult r = parse_options("policy=none");
  EXPECT_TRUE(r.options.no_policy);
  EXPECT_FALSE(r.options.policy);
}

TEST(PluginOptions, UnknownKeysAndBareWordsAreErrors) {
  OptionsResult r = parse_options("polcy=/x bare");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0],
            "event_plugin_options: unknown key 'polcy' (policy, partitions, control-socket, "
            "control-socket-group, max-records, answer-time-limit, answer-threads, config)");
  EXPECT_EQ(r.errors[1], "event_plugin_options: 'bare' is not key=value");
}

TEST(PluginOptions, AControlSocketGroupLetsMonitoringRead) {
  OptionsResult r = parse_options("control_socket_group=rdma-qos-monitor");
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.options.control_socket_group, "rdma-qos-monitor");
  EXPECT_FALSE(parse_options("").options.control_socket_group.has_value());
}

TEST(PluginOptions, AConfigFileIsReadInPlaceAndLaterWordsOverrideIt) {
  std::string path = ::testing::TempDir() + "/plugin-options-test.conf";
  std::ofstream(path) << "# rdma-qos plugin\npolicy /a.conf\npartitions = /b.conf\n\n"
                         "control-socket /run/x.sock  # trailing comment\n";
  OptionsResult r = parse_options("config=" + path + " policy=/c.conf");
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.options.policy, "/c.conf");
  EXPECT_EQ(r.options.partitions, "/b.conf");
  EXPECT_EQ(r.options.control_socket, "/run/x.sock");
  std::remove(path.c_str());
}

TEST(PluginOptions, ConfigFileErrorsNameFileAndLine) {
  std::string path = ::testing::TempDir() + "/plugin-options-bad.conf";
  std::ofstream(path) << "policy /a.conf\nsocket /x\npartitions\n";
  OptionsResult r = parse_options("config=" + path);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0],
            path +
                ":2: unknown key 'socket' (policy, partitions, control-socket, "
                "control-socket-group, max-records, answer-time-limit, answer-threads, config)");
  EXPECT_EQ(r.errors[1], path + ":3: expected 'key value'");
  std::remove(path.c_str());
}

TEST(PluginOptions, AnswerBoundsDefaultToRdmaQosSads) {
  OptionsResult r = parse_options("");
  EXPECT_EQ(r.options.max_records, 262144u);
  EXPECT_EQ(r.options.answer_time_limit, std::chrono::milliseconds(2000));
}

TEST(PluginOptions, AnswerBoundsAreOptionsAndConfigFileKeys) {
  OptionsResult words = parse_options("max-records=1000,answer_time_limit=0x1F4");
  EXPECT_TRUE(words.errors.empty()) << words.errors.front();
  EXPECT_EQ(words.options.max_records, 1000u);
  EXPECT_EQ(words.options.answer_time_limit, std::chrono::milliseconds(500));

  std::string path = ::testing::TempDir() + "/plugin-options-bounds.conf";
  std::ofstream(path) << "max_records 0\nanswer-time-limit = 0\n";
  OptionsResult file = parse_options("config=" + path);
  EXPECT_TRUE(file.errors.empty()) << file.errors.front();
  EXPECT_EQ(file.options.max_records, 0u);  // no bound, as OpenSM
  EXPECT_EQ(file.options.answer_time_limit, std::chrono::milliseconds(0));
  std::remove(path.c_str());
}

TEST(PluginOptions, BadAnswerBoundsAreErrorsThatKeepTheDefault) {
  OptionsResult r = parse_options("max-records=-1 answer-time-limit=3600001 max-records=12x");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0],
            "event_plugin_options: max-records: '-1' is not a number of records from 0 to "
            "18446744073709551615");
  EXPECT_EQ(r.errors[1],
            "event_plugin_options: answer-time-limit: '3600001' is not milliseconds from 0 to "
            "3600000");
  EXPECT_EQ(r.errors[2],
            "event_plugin_options: max-records: '12x' is not a number of records from 0 to "
            "18446744073709551615");
  EXPECT_EQ(r.options.max_records, 262144u);
  EXPECT_EQ(r.options.answer_time_limit, std::chrono::milliseconds(2000));
}

TEST(PluginOptions, AnswerThreadsDefaultToRdmaQosSadsAndZeroKeepsAnswersOnOpenSmsThreads) {
  EXPECT_EQ(parse_options("").options.answer_threads, 2u);
  OptionsResult none = parse_options("answer_threads=0");
  EXPECT_TRUE(none.errors.empty());
  EXPECT_EQ(none.options.answer_threads, 0u);
  OptionsResult many = parse_options("answer-threads=65");
  ASSERT_EQ(many.errors.size(), 1u);
  EXPECT_EQ(many.errors[0],
            "event_plugin_options: answer-threads: '65' is not a number of threads from 0 to 64");
  EXPECT_EQ(many.options.answer_threads, 2u);
}

TEST(PluginOptions, AMissingConfigFileIsAnError) {
  OptionsResult r = parse_options("config=/nonexistent/rdma-qos.conf");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "/nonexistent/rdma-qos.conf: cannot read the file");
}

}  // namespace
}  // namespace rdmaqos::osmp
