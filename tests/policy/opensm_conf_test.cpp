// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// opensm.conf QoS options, the VL arbitration arithmetic of seed 004 / the OpenSM manual, and
// the SL-to-VL15 warning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rdma-qos/policy/opensm_conf.h"

namespace rdmaqos::policy {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;

TEST(OpenSmConf, WithoutOptionsEveryPortClassHasOpenSmDefaults) {
  OpenSmConfResult r = parse_opensm_conf("# nothing about QoS\nsm_priority 1\n");
  EXPECT_TRUE(r.diagnostics.empty());
  const QosPortConfig& ca = r.config.port(PortClass::kCa);
  EXPECT_EQ(ca.max_vls, 15);
  EXPECT_EQ(ca.high_limit, 0);
  EXPECT_EQ(ca.sl2vl,
            (std::array<uint8_t, 16>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}));
  ASSERT_EQ(ca.vlarb_low.size(), 15u);
  EXPECT_EQ(ca.vlarb_low[1].weight, 4);
  EXPECT_EQ(ca.vlarb_high[0].weight, 4);
}

TEST(OpenSmConf, ReadsTheOptionsAnSaNeeds) {
  OpenSmConfResult r = parse_opensm_conf(
      "qos_policy_file /etc/opensm/qos-policy.conf\npartition_config_file /etc/opensm/p.conf\n"
      "subnet_timeout 20\nsm_sl 1\nsa_key 0x00000000000000ab\n");
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_EQ(r.sm.qos_policy_file, "/etc/opensm/qos-policy.conf");
  EXPECT_EQ(r.sm.partition_config_file, "/etc/opensm/p.conf");
  EXPECT_EQ(r.sm.subnet_timeout, 20);
  EXPECT_EQ(r.sm.sm_sl, 1);
  EXPECT_EQ(r.sm.sa_key, 0xABu);
}

TEST(OpenSmConf, MaxWireSmpsIsReadWithOpenSmsZeroForNoBound) {
  EXPECT_EQ(parse_opensm_conf("max_wire_smps 8\n").sm.max_wire_smps, 8u);
  EXPECT_EQ(parse_opensm_conf("max_wire_smps 0\n").sm.max_wire_smps, 0u);
  EXPECT_FALSE(parse_opensm_conf("max_wire_smps2 8\n").sm.max_wire_smps);
  OpenSmConfResult r = parse_opensm_conf("max_wire_smps 0x80000000\n");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_NE(r.diagnostics[0].message.find("max_wire_smps '0x80000000'"), std::string::npos);
  EXPECT_FALSE(r.sm.max_wire_smps);
}

TEST(OpenSmConf, OriginalExtendedRatesOnlyIsTrueOnlyAsOpenSmSpellsIt) {
  EXPECT_EQ(parse_opensm_conf("use_original_extended_sa_rates_only TRUE\n")
                .sm.original_extended_rates_only,
            true);
  EXPECT_EQ(parse_opensm_conf("use_original_extended_sa_rates_only true\n")
                .sm.original_extended_rates_only,
            false);
  EXPECT_FALSE(parse_opensm_conf("qos TRUE\n").sm.original_extended_rates_only);
}

TEST(OpenSmConf, QosIsOnOnlyAsOpenSmSpellsTrueAndAnotherSpellingIsWarnedOf) {
  EXPECT_TRUE(parse_opensm_conf("qos TRUE\n").config.qos);
  EXPECT_TRUE(parse_opensm_conf("qos TRUE\n").diagnostics.empty());
  EXPECT_FALSE(parse_opensm_conf("qos FALSE\n").config.qos);
  EXPECT_TRUE(parse_opensm_conf("qos FALSE\n").diagnostics.empty());
  for (const char* spelled : {"true", "True", "yes", "on", "1"}) {
    OpenSmConfResult r = parse_opensm_conf(std::string("# QoS\nqos ") + spelled + "\n");
    EXPECT_FALSE(r.config.qos) << spelled;
    ASSERT_EQ(r.diagnostics.size(), 1u) << spelled;
    EXPECT_EQ(r.diagnostics[0].severity, Severity::kWarning);
    EXPECT_EQ(r.diagnostics[0].location.line, 2);
    EXPECT_NE(r.diagnostics[0].message.find("is FALSE to OpenSM"), std::string::npos);
  }
  EXPECT_EQ(parse_opensm_conf("use_original_extended_sa_rates_only true\n").diagnostics.size(), 1u);
}

TEST(OpenSmConf, MKeyIsRead) {
  EXPECT_EQ(parse_opensm_conf("m_key 0x00000000000000fe\n").sm.m_key, 0xFEu);
  EXPECT_FALSE(parse_opensm_conf("m_key_protection_level 2\n").sm.m_key);
  EXPECT_EQ(parse_opensm_conf("m_key 0x1ffffffffffffffff\n").diagnostics.size(), 1u);
}

TEST(OpenSmConf, RoutingEngineIsTheListOpenSmTriesInOrder) {
  OpenSmConfResult r = parse_opensm_conf("routing_engine lash, minhop\n");
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_EQ(r.sm.routing_engines, (std::vector<std::string>{"lash", "minhop"}));
  EXPECT_TRUE(parse_opensm_conf("routing_engine (null)\n").sm.routing_engines.empty());
  EXPECT_TRUE(parse_opensm_conf("").sm.routing_engines.empty());
}

TEST(OpenSmConf, EnginesWhoseSlsAreLayersAreKnownByName) {
  for (const char* e : {"lash", "dfsssp", "nue", "torus-2QoS"})
    EXPECT_TRUE(routing_engine_assigns_sls(e)) << e;
  for (const char* e : {"minhop", "updn", "dnup", "ftree", "dor", "sssp", "file", ""})
    EXPECT_FALSE(routing_engine_assigns_sls(e)) << e;
}

TEST(OpenSmConf, AbsentSaOptionsStayUnset) {
  OpenSmConfResult r = parse_opensm_conf("qos_policy_file (null)\nsm_priority 1\n");
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_FALSE(r.sm.qos_policy_file);
  EXPECT_FALSE(r.sm.subnet_timeout);
  EXPECT_FALSE(r.sm.sa_key);
}

TEST(OpenSmConf, OutOfRangeSaOptionIsAnErrorAtItsLine) {
  OpenSmConfResult r = parse_opensm_conf("sm_sl 1\nsubnet_timeout 32\nsa_key -1\n");
  ASSERT_EQ(r.diagnostics.size(), 2u);
  EXPECT_EQ(r.diagnostics[0].location.line, 2);
  EXPECT_NE(r.diagnostics[0].message.find("subnet_timeout '32'"), std::string::npos);
  EXPECT_EQ(r.diagnostics[1].location.line, 3);
  EXPECT_FALSE(r.sm.subnet_timeout);
}

TEST(OpenSmConf, PrefixedOptionsWinOverUnprefixedInAnyOrder) {
  OpenSmConfResult r = parse_opensm_conf(
      "qos TRUE\nqos_ca_max_vls 8\nqos_max_vls 4\n"
      "qos_swe_high_limit 255\nqos_sw0_sl2vl (null)\n");
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_TRUE(r.config.qos);
  EXPECT_EQ(r.config.port(PortClass::kCa).max_vls, 8);
  EXPECT_EQ(r.config.port(PortClass::kRouter).max_vls, 4);
  EXPECT_EQ(r.config.port(PortClass::kSwitchExternal).high_limit, 255);
  EXPECT_EQ(r.config.port(PortClass::kSwitchPort0).sl2vl[15], 7);
}

TEST(OpenSmConf, BadValuesAreErrorsWithTheirLine) {
  OpenSmConfResult r = parse_opensm_conf(
      "qos_sl2vl 0,1,2\nqos_ca_vlarb_low 15:1\nqos_swe_high_limit 256\nqos_rtr_max_vls 0\n");
  std::vector<std::string> text;
  for (const auto& d : r.diagnostics) text.push_back(format_diagnostic(d, "opensm.conf"));
  EXPECT_THAT(text,
              ElementsAre("opensm.conf:1:1: error: qos_sl2vl has 3 entries, needs 16 (one VL per "
                          "SL)",
                          "opensm.conf:2:1: error: qos_ca_vlarb_low VL 15 is out of range (0..14)",
                          "opensm.conf:4:1: error: qos_rtr_max_vls '0' is out of range (1..15)",
                          "opensm.conf:3:1: error: qos_swe_high_limit '256' is out of range "
                          "(0..255)"));
}

// The manual's example: VL0 high priority limited to 6 x 4 KB, VL1..7 low with weights.
TEST(OpenSmConf, ManualExampleShares) {
  OpenSmConfResult r = parse_opensm_conf(
      "qos_ca_max_vls 15\nqos_ca_high_limit 6\nqos_ca_vlarb_high 0:4\n"
      "qos_ca_vlarb_low 0:0,1:64,2:128,3:192,4:0,5:64,6:64,7:64\n");
  VlArbAnalysis a = analyze_vlarb(r.config.port(PortClass::kCa), 4096);
  EXPECT_EQ(a.high_burst_bytes, 24576u);  // 6 x 4096
  // 24 KB of high priority, then one 4 KB low packet: 6/7 of the link under saturation.
  EXPECT_THAT(a.high_fraction, DoubleNear(6.0 / 7.0, 1e-9));
  ASSERT_EQ(a.vls.size(), 7u);  // VL0..3 and 5..7; VL4 is off
  EXPECT_EQ(a.vls[0].vl, 0);
  EXPECT_THAT(a.vls[0].share, DoubleNear(6.0 / 7.0, 1e-9));
  EXPECT_EQ(a.vls[3].vl, 3);
  EXPECT_EQ(a.vls[3].low_weight, 192u);
  EXPECT_THAT(a.vls[3].share, DoubleNear(1.0 / 7.0 * 192.0 / 576.0, 1e-9));
  EXPECT_EQ(a.vls[4].vl, 5);
  EXPECT_THAT(a.warnings,
              ElementsAre("vlarb_high weight 4 for VL 0 is below one 4096-byte packet (64 "
                          "credits): the VL still sends a whole packet per turn, so weights "
                          "below that do not set its share"));
}

TEST(OpenSmConf, LowTableAloneSharesByWeight) {
  QosPortConfig c = default_qos_port_config();
  c.vlarb_high.clear();
  c.vlarb_low = {{0, 128}, {1, 64}};  // seed 004: 66% / 33%
  VlArbAnalysis a = analyze_vlarb(c, 2048);
  ASSERT_EQ(a.vls.size(), 2u);
  EXPECT_THAT(a.vls[0].share, DoubleNear(2.0 / 3.0, 1e-9));
  EXPECT_THAT(a.vls[1].share, DoubleNear(1.0 / 3.0, 1e-9));
  EXPECT_TRUE(a.warnings.empty());
}

TEST(OpenSmConf, UnboundedHighLimitStarvesLowPriority) {
  QosPortConfig c = default_qos_port_config();
  c.high_limit = 255;
  c.vlarb_high = {{0, 64}};
  c.vlarb_low = {{1, 64}};
  VlArbAnalysis a = analyze_vlarb(c, 4096);
  EXPECT_FALSE(a.high_burst_bytes);
  EXPECT_THAT(a.vls[0].share, DoubleNear(1.0, 1e-9));
  EXPECT_THAT(a.vls[1].share, DoubleNear(0.0, 1e-9));
  EXPECT_THAT(a.warnings, ElementsAre("high_limit 255 is unbounded: saturated high-priority VLs "
                                      "starve the low-priority ones"));
}

TEST(OpenSmConf, LevelSlMappedToVl15IsAWarning) {
  ParseResult p = parse_policy(
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: Drop\nsl: 14\nend-qos-level\nend-qos-levels\n");
  OpenSmConfResult c = parse_opensm_conf("qos_swe_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,15,15\n");
  Diagnostics d = check_level_sls(p.policy, c.config);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(format_diagnostic(d[0], "p"),
            "p:6:1: warning: level 'Drop' uses SL 14, which qos_swe_sl2vl maps to VL 15: queries "
            "at this level get no path record\n  hint: OpenSM drops such answers silently");
}

}  // namespace
}  // namespace rdmaqos::policy
