// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's decisions: Service-ID and QoS-Class of a connection, the host-side match
// on RoCE and its traffic class, the CM ports on both sides, the roce_sl2tclass table.
#include "rdma-qos/rdmacm-qos/cm_qos.h"

#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>
#include <infiniband/ib.h>

#include "rdma-qos/config/host_config.h"

namespace rdmaqos::rdmacm {
namespace {

const char* kPolicy =
    "qos-levels\n"
    "qos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
    "qos-level\nname: RPING\nsl: 3\nend-qos-level\n"
    "qos-level\nname: UCMA\nsl: 5\nmtu-limit: 3\nrate-limit: 7\nend-qos-level\n"
    "qos-level\nname: GOLD\nsl: 6\npacket-life: 10\nend-qos-level\n"
    "end-qos-levels\n"
    "qos-match-rules\n"
    "qos-match-rule\nqos-class: 32\nqos-level-name: GOLD\nend-qos-match-rule\n"
    "qos-match-rule\nservice-id: 0x1061d27\nqos-level-name: RPING\nend-qos-match-rule\n"
    "qos-match-rule\nservice-id: 0x1061d28-0x1061d29\nqos-level-name: UCMA\n"
    "end-qos-match-rule\n"
    "end-qos-match-rules\n";

// Settings with roce_sl2tclass `sl2tclass` and nothing else.
CmSettings with_sl2tclass(const std::string& sl2tclass) {
  CmSettings s;
  s.sl2tclass = parse_sl2tclass(sl2tclass).value();
  return s;
}

// The settings a host configuration file gives (no environment).
CmSettings settings_from_file(const std::string& text) {
  auto loaded = config::parse_host_config(
      text, "rdma-qos.conf", [](std::string_view) -> std::optional<std::string> { return {}; });
  return cm_settings_from(loaded.config);
}

CmSettings settings_with_policy(const std::string& sl2tclass = "0,0,0,104,0,72,184") {
  CmSettings s = with_sl2tclass(sl2tclass);
  auto p = load_host_policy(kPolicy, "test.conf");
  EXPECT_TRUE(p.policy) << (p.messages.empty() ? "" : p.messages[0]);
  s.policy = p.policy;
  return s;
}

sockaddr_in v4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 v6(const char* ip, uint16_t port, uint32_t flowinfo = 0) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  a.sin6_flowinfo = htonl(flowinfo);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

const sockaddr* sa(const auto& a) {
  return reinterpret_cast<const sockaddr*>(&a);
}

TEST(ServiceId, IsPortSpaceShiftedOverThePort) {
  EXPECT_EQ(service_id(kPsTcp, 3260), 0x0000000001060CBCULL);
  EXPECT_EQ(service_id(kPsTcp, 18634), 0x00000000010648CAULL);
  EXPECT_EQ(service_id(kPsIb, 0x1234), 0x00000000013F1234ULL);
  EXPECT_EQ(service_id(kPsUdp, 7471), 0x0000000001111D2FULL);
}

TEST(ServiceId, OverrideWinsOverSettingWinsOverPort) {
  CmSettings s;
  IdInputs in;
  EXPECT_EQ(effective_service_id(kPsTcp, 7471, in, s), 0x1061D2FULL);
  s.service_id = 0x42;
  EXPECT_EQ(effective_service_id(kPsTcp, 7471, in, s), 0x42ULL);
  in.service_id_override = 0x43;
  EXPECT_EQ(effective_service_id(kPsTcp, 7471, in, s), 0x43ULL);
}

TEST(ServiceId, AfIbDestinationCarriesItsOwnServiceId) {
  sockaddr_ib ib{};
  ib.sib_family = AF_IB;
  ib.sib_sid = htobe64(0x1000000000012345ULL);  // not port space << 16 | port
  ib.sib_sid_mask = htobe64(~0ULL);
  const auto* addr = reinterpret_cast<const sockaddr*>(&ib);
  CmSettings s;
  IdInputs in;
  EXPECT_EQ(address_service_id(addr), 0x1000000000012345ULL);
  EXPECT_EQ(address_port(addr), 0x2345);
  EXPECT_EQ(effective_service_id(kPsIb, addr, in, s), 0x1000000000012345ULL);
  in.service_id_override = 0x43;  // rdma_qos_set_service_id still wins
  EXPECT_EQ(effective_service_id(kPsIb, addr, in, s), 0x43ULL);
}

TEST(ServiceId, IpDestinationGivesPortSpaceAndPort) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(7471);
  const auto* addr = reinterpret_cast<const sockaddr*>(&sin);
  EXPECT_FALSE(address_service_id(addr));
  EXPECT_EQ(effective_service_id(kPsTcp, addr, IdInputs{}, CmSettings{}), 0x1061D2FULL);
}

TEST(QosClass, OverrideThenProgramTosThenSetting) {
  CmSettings s;
  IdInputs in;
  EXPECT_FALSE(effective_qos_class(in, s));
  s.qos_class = 7;
  EXPECT_EQ(effective_qos_class(in, s), 7);
  in.program_tos = 0x20;
  EXPECT_EQ(effective_qos_class(in, s), 0x20);
  in.class_override = 9;
  EXPECT_EQ(effective_qos_class(in, s), 9);
}

TEST(CmPorts, ActiveSideTakesTheRemoteServicePortAndItsOwnSourcePort) {
  auto local = v4("10.0.0.1", 40000), remote = v4("10.0.0.2", 7471);
  auto c = cm_connection(sa(local), sa(remote), false);
  EXPECT_EQ(c.dport, 7471);
  EXPECT_EQ(c.sport, 40000);
  EXPECT_FALSE(c.application_label);
}

TEST(CmPorts, PassiveSideTakesItsOwnServicePortAndTheRemoteSourcePort) {
  auto local = v6("fd00::2", 7471), remote = v6("fd00::1", 40000);
  auto c = cm_connection(sa(local), sa(remote), true);
  EXPECT_EQ(c.dport, 7471);
  EXPECT_EQ(c.sport, 40000);
}

TEST(CmPorts, ActiveIpv6SourceFlowInfoIsTheProgramsLabel) {
  auto local = v6("fd00::1", 40000, 0x12345), remote = v6("fd00::2", 7471);
  EXPECT_TRUE(cm_connection(sa(local), sa(remote), false).application_label);
}

TEST(Sl2Tclass, ListsTrafficClassesBySl) {
  auto t = parse_sl2tclass("0, 0x68 ,72");
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[0], 0);
  EXPECT_EQ((*t)[1], 104);
  EXPECT_EQ((*t)[2], 72);
  EXPECT_FALSE((*t)[3]);
}

TEST(Sl2Tclass, RejectsBadText) {
  EXPECT_FALSE(parse_sl2tclass("256"));
  EXPECT_FALSE(parse_sl2tclass("1,,2"));
  EXPECT_FALSE(parse_sl2tclass("x"));
  EXPECT_FALSE(parse_sl2tclass("0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"));  // 17 SLs
  EXPECT_TRUE(parse_sl2tclass(""));
}

TEST(Settings, TheKnobsGiveClassTosServiceIdAndTrafficClasses) {
  CmSettings s =
      settings_from_file("class 4095\ntos 0x68\nservice_id 0x1061d27\nroce_sl2tclass 104,0,72\n");
  EXPECT_EQ(s.qos_class, 4095);
  EXPECT_EQ(s.tos, 0x68);
  EXPECT_EQ(s.service_id, 0x1061d27u);
  EXPECT_EQ(s.sl2tclass[0], 104);
  EXPECT_EQ(s.sl2tclass[1], 0);
  EXPECT_EQ(s.sl2tclass[2], 72);
  EXPECT_FALSE(s.sl2tclass[3]);
}

TEST(Settings, GarbageMeansNotSet) {
  CmSettings s = settings_from_file("class 4096\ntos 300\nservice_id -1\nroce_sl2tclass 1,2,x\n");
  EXPECT_FALSE(s.qos_class);
  EXPECT_FALSE(s.tos);
  EXPECT_FALSE(s.service_id);
  for (const auto& t : s.sl2tclass) EXPECT_FALSE(t);
}

TEST(DecideRoce, WithoutPolicyThereIsNoDecision) {
  CmSettings s;
  EXPECT_FALSE(decide_roce(0x1061D27, std::nullopt, 0xFFFF, s));
}

TEST(DecideRoce, ServiceIdSelectsTheLevelAndSl2TclassItsTrafficClass) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "RPING");
  EXPECT_EQ(d->sl, 3);
  EXPECT_EQ(d->traffic_class, 104);
  EXPECT_FALSE(d->mtu_limit);
  ASSERT_TRUE(d->rule);
  EXPECT_EQ(*d->rule, 1u);
}

TEST(DecideRoce, LevelCarriesMtuAndRateLimits) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1061D29, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->sl, 5);
  EXPECT_EQ(d->traffic_class, 72);
  EXPECT_EQ(d->mtu_limit, 3);
  EXPECT_EQ(d->rate_limit, 7);
  auto q = to_qos_decision(*d);
  EXPECT_EQ(q.sl, 5);
  EXPECT_EQ(q.traffic_class, 72);
  EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(q.static_rate, 7);
  EXPECT_TRUE(q.pace);                     // the level's own rate-limit: the QP is paced at it
  EXPECT_EQ(q.ack_timeout, std::nullopt);  // UCMA names no packet lifetime
}

TEST(DecideRoce, ALevelWithoutARateLimitSetsNoRateAndPacesNothing) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s);  // RPING
  ASSERT_TRUE(d);
  auto q = to_qos_decision(*d);
  EXPECT_FALSE(q.static_rate);
  EXPECT_FALSE(q.pace);
}

// The kernel's CM: local ACK timeout = the path's packet lifetime + 1.
TEST(DecideRoce, LevelsPacketLifetimeBecomesTheAckTimeout) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1061D27, uint16_t{32}, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->packet_life, 10);
  EXPECT_EQ(to_qos_decision(*d).ack_timeout, 11);
}

TEST(DecideRoce, QosClassRuleComesFirst) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1061D27, uint16_t{32}, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "GOLD");
  EXPECT_EQ(d->traffic_class, 184);
}

TEST(DecideRoce, UnmatchedGoesToTheDefaultLevel) {
  CmSettings s = settings_with_policy();
  auto d = decide_roce(0x1060001, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->sl, 0);
  EXPECT_FALSE(d->rule);
  EXPECT_EQ(d->traffic_class, 0);
}

TEST(DecideRoce, SlWithoutTrafficClassLeavesTos) {
  CmSettings s = settings_with_policy("0,0,0");  // SL 3 not listed
  auto d = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->traffic_class);
}

// A tclass rule (rdma-qos's extension) matches only a connection whose program set that
// traffic class (TOS / IPV6_TCLASS); without one the rules below it decide.
TEST(DecideRoce, TClassRuleMatchesOnlyTheProgramsTrafficClass) {
  const std::string policy = std::string(kPolicy).insert(
      std::string(kPolicy).find("qos-match-rule\nqos-class: 32"),
      "qos-match-rule\ntclass: 96-127\nqos-level-name: UCMA\nend-qos-match-rule\n");
  CmSettings s = with_sl2tclass("0,0,0,104,0,72,184");
  auto p = load_host_policy(policy, "test.conf");
  ASSERT_TRUE(p.policy) << (p.messages.empty() ? "" : p.messages[0]);
  s.policy = p.policy;
  auto with = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s, uint8_t{104});
  ASSERT_TRUE(with);
  EXPECT_EQ(with->level, "UCMA");
  auto other = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s, uint8_t{8});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->level, "RPING");
  auto none = decide_roce(0x1061D27, std::nullopt, 0xFFFF, s);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->level, "RPING");
}

TEST(TosToSet, LevelTrafficClassElseProgramsElseSetting) {
  CmSettings s;
  IdInputs in;
  CmDecision d;
  d.traffic_class = 104;
  EXPECT_EQ(tos_to_set(d, in, s), 104);
  d.traffic_class.reset();
  EXPECT_FALSE(tos_to_set(d, in, s));
  s.tos = 32;
  EXPECT_EQ(tos_to_set(d, in, s), 32);
  in.program_tos = 8;
  EXPECT_FALSE(tos_to_set(d, in, s));  // the program's TOS is already in the id
}

TEST(HostPolicy, RulesNamingPortGroupsGetARoceWarning) {
  std::string text =
      "port-groups\nport-group\nname: A\nport-guid: 0x1\nend-port-group\nend-port-groups\n"
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: L1\nsl: 1\nend-qos-level\nend-qos-levels\n"
      "qos-match-rules\nqos-match-rule\nsource: A\nqos-level-name: L1\nend-qos-match-rule\n"
      "qos-match-rule\nservice-id: 1\nqos-level-name: L1\nend-qos-match-rule\n"
      "end-qos-match-rules\n";
  auto p = load_host_policy(text, "p.conf");
  ASSERT_TRUE(p.policy);
  int roce_warnings = 0;
  for (const auto& m : p.messages)
    if (m.find("on RoCE") != std::string::npos) {
      ++roce_warnings;
      EXPECT_NE(m.find("p.conf:"), std::string::npos) << m;
    }
  EXPECT_EQ(roce_warnings, 1);
}

TEST(HostPolicy, ErrorsLeaveNoPolicyAndSayWhere) {
  auto p = load_host_policy("qos-levels\nqos-level\nsl: 99\n", "bad.conf");
  EXPECT_FALSE(p.policy);
  ASSERT_FALSE(p.messages.empty());
  EXPECT_NE(p.messages[0].find("bad.conf:"), std::string::npos);
}

TEST(IdRegistry, KeepsInputsAndDecisionPerIdUntilErased) {
  auto& r = IdRegistry::instance();
  int a = 0, b = 0;
  r.set_class(&a, 5);
  r.set_program_tos(&a, 0x20);
  r.set_service_id(&b, 0x99);
  CmDecision d;
  d.sl = 4;
  r.set_decision(&a, d);
  EXPECT_EQ(r.get(&a).inputs.class_override, 5);
  EXPECT_EQ(r.get(&a).inputs.program_tos, 0x20);
  EXPECT_EQ(r.get(&a).decision->sl, 4);
  EXPECT_FALSE(r.get(&b).inputs.class_override);
  EXPECT_EQ(r.get(&b).inputs.service_id_override, 0x99ULL);
  r.erase(&a);
  EXPECT_FALSE(r.get(&a).decision);
  r.erase(&b);
}

// Passive side: 0x1061d28 is UCMA (SL 5, traffic class 72); QoS-Class 32 is GOLD (SL 6, 184).
TEST(DecidePassive, TrafficClassOfAProgramClassFindsThatClassesLevel) {
  auto s = settings_with_policy();
  auto d = decide_roce_passive(0x1061d28, 184, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "GOLD");
  EXPECT_EQ(d->sl, 6);
  EXPECT_EQ(d->qos_class, 32);
}

TEST(DecidePassive, TrafficClassOfTheServiceLevelKeepsTheServiceIdMatch) {
  auto s = settings_with_policy();
  auto d = decide_roce_passive(0x1061d28, 72, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "UCMA");
  EXPECT_EQ(d->sl, 5);
  EXPECT_FALSE(d->qos_class);
}

TEST(DecidePassive, UnknownOrMissingTrafficClassFallsBackToTheServiceIdMatch) {
  auto s = settings_with_policy();
  for (std::optional<uint8_t> t : {std::optional<uint8_t>{4}, std::optional<uint8_t>{}}) {
    auto d = decide_roce_passive(0x1061d28, t, 0xFFFF, s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->level, "UCMA");
  }
}

TEST(DecidePassive, ProgramTosWithoutSl2TclassEntryIsTheClass) {
  // No traffic class for any SL: the active side's TOS 32 stays on the wire and is the class.
  auto s = settings_with_policy("");
  auto d = decide_roce_passive(0x1061d28, 32, 0xFFFF, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, "GOLD");
}

// One try per run of classes the policy's qos-class criteria treat alike: here 32 (GOLD's rule)
// and 33 (the run after it, up to 255).
TEST(DecidePassive, TriesOneClassPerRunOfClassesThePolicyTreatsAlike) {
  auto s = settings_with_policy();
  EXPECT_EQ(passive_classes(*s.policy), (std::vector<uint16_t>{32, 33}));
}

TEST(DecidePassive, ARangeOfClassesIsFoundByItsFirstClass) {
  CmSettings s = with_sl2tclass("0,0,0,104,0,72,184");
  auto p = load_host_policy(
      "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: GOLD\nsl: 6\nend-qos-level\n"
      "qos-level\nname: SILVER\nsl: 5\nend-qos-level\nend-qos-levels\n"
      "qos-match-rules\n"
      "qos-match-rule\nqos-class: 100-200\nqos-level-name: GOLD\nend-qos-match-rule\n"
      "qos-match-rule\nqos-class: 150-250\nqos-level-name: SILVER\nend-qos-match-rule\n"
      "end-qos-match-rules\n",
      "ranges.conf");
  ASSERT_TRUE(p.policy);
  s.policy = p.policy;
  EXPECT_EQ(passive_classes(*s.policy), (std::vector<uint16_t>{100, 150, 201, 251}));
  for (bool indexed : {false, true}) {
    if (indexed) index_passive_classes(s);
    auto gold = decide_roce_passive(0x1061d28, 184, 0xFFFF, s);  // SL 6's traffic class
    ASSERT_TRUE(gold);
    EXPECT_EQ(gold->level, "GOLD");
    EXPECT_EQ(gold->qos_class, 184);  // the class equal to the traffic class comes first
    auto silver = decide_roce_passive(0x1061d28, 72, 0xFFFF, s);  // SL 5's: only 201-250
    ASSERT_TRUE(silver);
    EXPECT_EQ(silver->level, "SILVER");
    EXPECT_EQ(silver->qos_class, 201);
  }
}

TEST(DecidePassive, WithoutPolicyThereIsNoDecision) {
  CmSettings s;
  EXPECT_FALSE(decide_roce_passive(0x1061d28, 184, 0xFFFF, s));
}

// Two levels sharing a traffic class: SL 1 and SL 7 both map to 32. Port 0x1061d74's level is
// BRONZE, QoS-Class 40's SILVER.
CmSettings shared_tclass_settings(const char* sl2tclass = "0,32,0,0,0,0,0,32") {
  CmSettings s = with_sl2tclass(sl2tclass);
  auto p = load_host_policy(
      "qos-levels\n"
      "qos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
      "qos-level\nname: BRONZE\nsl: 1\nend-qos-level\n"
      "qos-level\nname: SILVER\nsl: 7\nend-qos-level\n"
      "end-qos-levels\n"
      "qos-match-rules\n"
      "qos-match-rule\nqos-class: 40\nqos-level-name: SILVER\nend-qos-match-rule\n"
      "qos-match-rule\nservice-id: 0x1061d74\nqos-level-name: BRONZE\nend-qos-match-rule\n"
      "end-qos-match-rules\n",
      "shared.conf");
  EXPECT_TRUE(p.policy);
  s.policy = p.policy;
  index_passive_classes(s);
  return s;
}

TEST(DecideTagged, TwoLevelsSharingATrafficClassOnlyTheTagTellsApart) {
  CmSettings s = shared_tclass_settings();
  // The active side: the program's TOS 40 is its QoS-Class: SILVER, which sends 32.
  IdInputs in;
  in.program_tos = 40;
  auto active = decide_roce(0x1061d74, effective_qos_class(in, s), 0xFFFF, s, in.program_tos);
  ASSERT_TRUE(active);
  EXPECT_EQ(active->level, "SILVER");
  EXPECT_EQ(active->traffic_class, 32);
  // Without the tag the passive side finds BRONZE, which also sends 32.
  auto guessed = decide_roce_passive(0x1061d74, 32, 0xFFFF, s);
  ASSERT_TRUE(guessed);
  EXPECT_EQ(guessed->level, "BRONZE");
  // With it, the active side's level.
  CmTag tag = tag_of(active, in, s);
  EXPECT_EQ(tag.qos_class, 40);
  EXPECT_EQ(tag.tclass, 40);
  EXPECT_EQ(tag.level_hash, cm_tag_level_hash("SILVER"));
  auto tagged = decide_roce_tagged(0x1061d74, tag, 32, 0xFFFF, s);
  ASSERT_TRUE(tagged.decision);
  EXPECT_EQ(tagged.decision->level, "SILVER");
  EXPECT_EQ(tagged.decision->sl, 7);
  EXPECT_TRUE(tagged.agrees);
}

TEST(DecideTagged, TheSettingsClassAndNoProgramTos) {
  CmSettings s = shared_tclass_settings();
  s.qos_class = 40;  // RDMA_QOS_CLASS on the active host
  IdInputs in;
  auto active = decide_roce(0x1061d74, effective_qos_class(in, s), 0xFFFF, s, in.program_tos);
  CmTag tag = tag_of(active, in, s);
  EXPECT_EQ(tag.qos_class, 40);
  EXPECT_FALSE(tag.tclass);
  CmSettings passive = shared_tclass_settings();  // no class of its own
  auto tagged = decide_roce_tagged(0x1061d74, tag, 32, 0xFFFF, passive);
  ASSERT_TRUE(tagged.decision);
  EXPECT_EQ(tagged.decision->level, "SILVER");
  EXPECT_TRUE(tagged.agrees);
}

TEST(DecideTagged, NoLevelMatchedOnTheActiveSide) {
  CmSettings s = shared_tclass_settings();
  IdInputs in;
  CmTag tag = tag_of(std::nullopt, in, s);
  EXPECT_EQ(tag, CmTag{});
  // The passive host's policy gives BRONZE for the port: it keeps its own, and says so.
  auto tagged = decide_roce_tagged(0x1061d74, tag, 0, 0xFFFF, s);
  ASSERT_TRUE(tagged.decision);
  EXPECT_EQ(tagged.decision->level, "BRONZE");
  EXPECT_FALSE(tagged.agrees);
}

TEST(DecideTagged, PoliciesThatDifferAreTold) {
  CmSettings s = shared_tclass_settings();
  // The active host's level had another name.
  CmTag renamed{uint16_t{40}, uint8_t{40}, cm_tag_level_hash("PLATINUM")};
  auto a = decide_roce_tagged(0x1061d74, renamed, 32, 0xFFFF, s);
  ASSERT_TRUE(a.decision);
  EXPECT_EQ(a.decision->level, "SILVER");  // this host's own level for the inputs
  EXPECT_FALSE(a.agrees);
  // The same level, but this host maps its SL to another traffic class than the one received.
  CmTag same{uint16_t{40}, uint8_t{40}, cm_tag_level_hash("SILVER")};
  EXPECT_TRUE(decide_roce_tagged(0x1061d74, same, 32, 0xFFFF, s).agrees);
  EXPECT_FALSE(decide_roce_tagged(0x1061d74, same, 104, 0xFFFF, s).agrees);
  // Unknown received traffic class: the name alone decides.
  EXPECT_TRUE(decide_roce_tagged(0x1061d74, same, std::nullopt, 0xFFFF, s).agrees);
}

TEST(IdRegistry, KeepsThePeersTagUntilErased) {
  auto& r = IdRegistry::instance();
  int id = 0;
  CmTag tag{uint16_t{40}, std::nullopt, std::nullopt};
  r.set_peer_tag(&id, tag);
  EXPECT_EQ(r.get(&id).peer_tag, tag);
  r.erase(&id);
  EXPECT_FALSE(r.get(&id).peer_tag);
}

TEST(PassiveLabel, KernelHashOrZeroIsNotTheProgramsLabel) {
  // Kernel: (50000 * 31 + 7471) & 0xFFFFF = 508895.
  EXPECT_FALSE(passive_application_label(508895, 7471, 50000));
  EXPECT_FALSE(passive_application_label(0, 7471, 50000));
  EXPECT_TRUE(passive_application_label(0x12345, 7471, 50000));
}

ibv_ah_attr ud_ah(uint32_t flow_label) {
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.port_num = 1;
  ah.grh.flow_label = flow_label;
  return ah;
}

CmDecision ud_decision() {
  CmDecision d;
  d.sl = 3;
  d.traffic_class = 104;
  d.rate_limit = 7;
  return d;
}

// CM ports dport 0x123, sport 0xabcd: RFC label h = 0x123 * 0xabcd = 0xc34a07, h ^= h >> 16,
// h ^= h >> 8, & 0xFFFFF = 0x3898e; kernel label (0xabcd * 31 + 0x123) & 0xFFFFF = 0x4cef6.
constexpr providers::CmConnection kUdPorts{0x123, 0xabcd, false};

TEST(UdAh, DecisionAndRfcLabelReplaceTheKernelsLabel) {
  ibv_ah_attr ah = ud_ah(0x4cef6);
  EXPECT_TRUE(apply_ud_decision(ah, ud_decision(), kUdPorts, {}, true));
  EXPECT_EQ(ah.sl, 3);
  EXPECT_EQ(ah.grh.traffic_class, 104);
  EXPECT_EQ(ah.static_rate, 7);
  EXPECT_EQ(ah.grh.flow_label, 0x3898eu);
}

TEST(UdAh, ZeroLabelGetsTheModesLabel) {
  ibv_ah_attr ah = ud_ah(0);
  providers::FlowLabelSetting fixed{providers::FlowLabelMode::kFixed, 0x777};
  EXPECT_TRUE(apply_ud_decision(ah, std::nullopt, kUdPorts, fixed, true));
  EXPECT_EQ(ah.grh.flow_label, 0x777u);
  EXPECT_EQ(ah.sl, 0);
}

TEST(UdAh, ProgramsLabelModeOffAndInfiniBandKeepTheLabel) {
  ibv_ah_attr own = ud_ah(0x12345);
  EXPECT_FALSE(apply_ud_decision(own, std::nullopt, kUdPorts, {}, true));
  EXPECT_EQ(own.grh.flow_label, 0x12345u);
  ibv_ah_attr chosen = ud_ah(0);
  EXPECT_FALSE(apply_ud_decision(chosen, std::nullopt, {0x123, 0xabcd, true}, {}, true));
  EXPECT_EQ(chosen.grh.flow_label, 0u);
  ibv_ah_attr off = ud_ah(0x4cef6);
  EXPECT_FALSE(
      apply_ud_decision(off, std::nullopt, kUdPorts, {providers::FlowLabelMode::kOff, 0}, true));
  EXPECT_EQ(off.grh.flow_label, 0x4cef6u);
  ibv_ah_attr ib = ud_ah(0);
  EXPECT_TRUE(apply_ud_decision(ib, ud_decision(), kUdPorts, {}, false));
  EXPECT_EQ(ib.grh.flow_label, 0u);
  EXPECT_EQ(ib.sl, 3);
}

// The label a UD id's decision carries for AHs to its peer, by mode: RFC 0x3898e, Linux
// (0xabcd * 31 + 0x123) & 0xFFFFF = 0x4cef6, fixed as set; none when the program chose its
// label, a port is unknown or the mode is off.
TEST(UdAh, IdsLabelByMode) {
  using providers::FlowLabelMode;
  EXPECT_EQ(ud_flow_label(kUdPorts, {}), 0x3898eu);
  EXPECT_EQ(ud_flow_label(kUdPorts, {FlowLabelMode::kLinux, 0}), 0x4cef6u);
  EXPECT_EQ(ud_flow_label(kUdPorts, {FlowLabelMode::kFixed, 0x777}), 0x777u);
  EXPECT_EQ(ud_flow_label(kUdPorts, {FlowLabelMode::kOff, 0}), std::nullopt);
  EXPECT_EQ(ud_flow_label({0x123, 0xabcd, true}, {}), std::nullopt);
  EXPECT_EQ(ud_flow_label({0, 0xabcd, false}, {}), std::nullopt);
  EXPECT_EQ(ud_flow_label({0x123, 0, false}, {}), std::nullopt);
}

TEST(UdAh, PeerDecisionCarriesTheLabelWithOrWithoutALevel) {
  auto with_level = to_qos_decision(ud_decision(), 0x3898e);
  EXPECT_EQ(with_level.sl, 3);
  EXPECT_EQ(with_level.traffic_class, 104);
  EXPECT_EQ(with_level.static_rate, 7);
  EXPECT_EQ(with_level.flow_label, 0x3898eu);
  auto label_only = to_qos_decision(std::nullopt, 0x3898e);
  EXPECT_EQ(label_only.sl, std::nullopt);
  EXPECT_EQ(label_only.traffic_class, std::nullopt);
  EXPECT_EQ(label_only.flow_label, 0x3898eu);
  EXPECT_EQ(to_qos_decision(ud_decision()).flow_label, std::nullopt);  // a connection's QP
}

TEST(UdAh, NoGrhGetsNoTrafficClass) {
  ibv_ah_attr ah{};
  EXPECT_TRUE(apply_ud_decision(ah, ud_decision(), kUdPorts, {}, true));
  EXPECT_EQ(ah.grh.traffic_class, 0);
  EXPECT_EQ(ah.sl, 3);
}

}  // namespace
}  // namespace rdmaqos::rdmacm

namespace rdmaqos::rdmacm {
namespace {

// sin6_flowinfo: traffic class in bits 27:20, flow label in bits 19:0 (network order).
TEST(AddressTrafficClass, IsTheIpv6FlowinfosTrafficClassByte) {
  auto a = v6("fd00::2", 7500, (32u << 20) | 0x12345);
  EXPECT_EQ(address_traffic_class(reinterpret_cast<const sockaddr*>(&a)),
            std::optional<uint8_t>(32));
  EXPECT_EQ(address_flow_label(reinterpret_cast<const sockaddr*>(&a)), 0x12345u);
}

TEST(AddressTrafficClass, NoneWhenZeroOrNotIpv6) {
  auto a = v6("fd00::2", 7500, 0x12345);
  EXPECT_EQ(address_traffic_class(reinterpret_cast<const sockaddr*>(&a)), std::nullopt);
  sockaddr_in b{};
  b.sin_family = AF_INET;
  b.sin_addr.s_addr = htonl(0x0a000002);
  EXPECT_EQ(address_traffic_class(reinterpret_cast<const sockaddr*>(&b)), std::nullopt);
  EXPECT_EQ(address_traffic_class(nullptr), std::nullopt);
}

}  // namespace
}  // namespace rdmaqos::rdmacm
