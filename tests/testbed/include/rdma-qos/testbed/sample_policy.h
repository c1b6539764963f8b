// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The small QoS policy the InfiniBand tests share (OpenSM syntax): iSER's Service-ID gets level
// ISER (SL 3, 5 Gb/s, packet life 8), QoS-Class 7 gets GOLD (SL 5, MTU 1024, packet life 12),
// Service-IDs 0x200-0x2FF get SLOW (SL 2, MTU 512, 30 Gb/s), QoS-Class 9 from one port gets
// ISER, SDP gets SL 1 through the simplified syntax. Tests pick the parts they need; every part
// has the same text everywhere.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace rdmaqos::testbed {

// The iSER Service-ID (TCP port space, port 3260) the ISER rule matches.
inline constexpr unsigned long long kSampleIserServiceId = 0x1060CBC;

struct SamplePolicyParts {
  bool gold = true;     // level GOLD, rule qos-class 7
  bool slow = false;    // level SLOW, rule service-id 0x200-0x2FF
  bool sdp_ulp = true;  // qos-ulps: sdp : 1
  // GOLD's rule before ISER's: OpenSM applies the first rule that matches, so a query with both
  // the iSER Service-ID and QoS-Class 7 gets GOLD instead of ISER.
  bool gold_first = false;
  // Non-zero: a port group Initiators holding this port GUID, and a last rule giving QoS-Class
  // 9 from Initiators level ISER; the paths of that class are asymmetric (SL 3 from the port,
  // DEFAULT's SL 0 towards it).
  uint64_t initiator_port_guid = 0;
};

// Levels in a fixed order: DEFAULT, ISER, then GOLD and SLOW when asked for. Rules in the same
// order (GOLD's first with gold_first), then the Initiators rule.
inline std::string sample_policy(SamplePolicyParts parts) {
  std::string levels = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: ISER
    sl: 3
    rate-limit: 5
    packet-life: 8
  end-qos-level
)";
  const std::string iser_rule = R"(  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: ISER
  end-qos-match-rule
)";
  const std::string gold_rule = R"(  qos-match-rule
    qos-class: 7
    qos-level-name: GOLD
  end-qos-match-rule
)";
  std::string rules = "qos-match-rules\n";
  if (parts.gold && parts.gold_first) rules += gold_rule;
  rules += iser_rule;
  if (parts.gold && !parts.gold_first) rules += gold_rule;
  if (parts.gold) {
    levels += R"(  qos-level
    name: GOLD
    sl: 5
    mtu-limit: 3
    packet-life: 12
  end-qos-level
)";
  }
  if (parts.slow) {
    levels += R"(  qos-level
    name: SLOW
    sl: 2
    mtu-limit: 2
    rate-limit: 6
  end-qos-level
)";
    rules += R"(  qos-match-rule
    service-id: 0x200-0x2FF
    qos-level-name: SLOW
  end-qos-match-rule
)";
  }
  std::string groups;
  if (parts.initiator_port_guid != 0) {
    groups = fmt::format(R"(port-groups
  port-group
    name: Initiators
    port-guid: {:#x}
  end-port-group
end-port-groups

)",
                         parts.initiator_port_guid);
    rules += R"(  qos-match-rule
    qos-class: 9
    source: Initiators
    qos-level-name: ISER
  end-qos-match-rule
)";
  }
  std::string text = groups + levels + "end-qos-levels\n\n" + rules + "end-qos-match-rules\n";
  if (parts.sdp_ulp) text += "\nqos-ulps\n  sdp : 1\nend-qos-ulps\n";
  return text;
}

}  // namespace rdmaqos::testbed
