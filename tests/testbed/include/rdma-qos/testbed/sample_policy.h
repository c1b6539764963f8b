// The small QoS policy the InfiniBand tests share (OpenSM syntax): iSER's Service-ID gets level
// ISER (SL 3, 5 Gb/s, packet life 8), QoS-Class 7 gets GOLD (SL 5, MTU 1024, packet life 12),
// Service-IDs 0x200-0x2FF get SLOW (SL 2, MTU 512, 30 Gb/s), SDP gets SL 1 through the
// simplified syntax. Tests pick the parts they need; every part has the same text everywhere.
#pragma once

#include <string>

namespace rdmaqos::testbed {

// The iSER Service-ID (TCP port space, port 3260) the ISER rule matches.
inline constexpr unsigned long long kSampleIserServiceId = 0x1060CBC;

struct SamplePolicyParts {
  bool gold = true;     // level GOLD, rule qos-class 7
  bool slow = false;    // level SLOW, rule service-id 0x200-0x2FF
  bool sdp_ulp = true;  // qos-ulps: sdp : 1
};

// Levels and rules in a fixed order: DEFAULT, ISER, then GOLD and SLOW when asked for.
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
  std::string rules = R"(qos-match-rules
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: ISER
  end-qos-match-rule
)";
  if (parts.gold) {
    levels += R"(  qos-level
    name: GOLD
    sl: 5
    mtu-limit: 3
    packet-life: 12
  end-qos-level
)";
    rules += R"(  qos-match-rule
    qos-class: 7
    qos-level-name: GOLD
  end-qos-match-rule
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
  std::string text = levels + "end-qos-levels\n\n" + rules + "end-qos-match-rules\n";
  if (parts.sdp_ulp) text += "\nqos-ulps\n  sdp : 1\nend-qos-ulps\n";
  return text;
}

}  // namespace rdmaqos::testbed
