// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad against OpenSM on a fabric of every link speed ibsim simulates (FDR, EDR and HDR
// at widths 1x to 12x beside QDR and DDR; see testbed::mixed_speed_tree): path rates, rate
// limits above 40 Gb/s and rate selectors that bind, and the rates OpenSM lowers for ports that
// do not announce 2x widths or HDR speeds.
#include <set>

#include "differential_fixture.h"

namespace rdmaqos::sad::differential {
namespace {

// Rate limits of 100, 56, 25, 200, 28 and 300 Gb/s by Service-ID; SL 1 to 6; a packet life
// above 31 (the field has 6 bits).
const std::string kSpeedPolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: EDR4
    sl: 1
    rate-limit: 16
  end-qos-level
  qos-level
    name: FDR4
    sl: 2
    rate-limit: 12
  end-qos-level
  qos-level
    name: EDR1
    sl: 3
    rate-limit: 15
  end-qos-level
  qos-level
    name: HDR4
    sl: 4
    rate-limit: 17
  end-qos-level
  qos-level
    name: FDR2
    sl: 5
    rate-limit: 19
  end-qos-level
  qos-level
    name: EDR12
    sl: 6
    rate-limit: 18
    packet-life: 40
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x300
    qos-level-name: EDR4
  end-qos-match-rule
  qos-match-rule
    service-id: 0x301
    qos-level-name: FDR4
  end-qos-match-rule
  qos-match-rule
    service-id: 0x302
    qos-level-name: EDR1
  end-qos-match-rule
  qos-match-rule
    service-id: 0x303
    qos-level-name: HDR4
  end-qos-match-rule
  qos-match-rule
    service-id: 0x304
    qos-level-name: FDR2
  end-qos-match-rule
  qos-match-rule
    service-id: 0x305
    qos-level-name: EDR12
  end-qos-match-rule
end-qos-match-rules
)";

constexpr int kCas = 11;  // one CA per link kind of mixed_speed_tree

const testbed::Topology& speed_tree() {
  static const testbed::Topology t = testbed::make_fat_tree(testbed::mixed_speed_tree(kCas));
  return t;
}
std::string lid_of(const std::string& node) {
  return std::to_string(speed_tree().node(node).lid);
}
std::string gid_of(const std::string& node) {
  uint64_t guid = speed_tree().node(node).port_guid;
  return fmt::format("fe80::{:x}:{:x}:{:x}:{:x}", guid >> 48, (guid >> 32) & 0xFFFF,
                     (guid >> 16) & 0xFFFF, guid & 0xFFFF);
}

std::vector<Query> speed_queries() {
  std::vector<Query> out;
  // Rate codes: 11 = 14, 12 = 56, 14 = 168, 15 = 25, 16 = 100, 17 = 200, 18 = 300, 19 = 28,
  // 20 = 50, 21 = 400, 22 = 600 Gb/s; 7 = 40, 10 = 120. Asked with `rdma-qos path` (saquery
  // sends no rate or MTU selector with -p --slid --dlid).
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"--service-id", "0x300"},
      {"--service-id", "0x301"},
      {"--service-id", "0x302"},
      {"--service-id", "0x303"},
      {"--service-id", "0x304"},
      {"--service-id", "0x305"},
      {"--rate", ">16"},
      {"--rate", "<16"},
      {"--rate", "=16"},
      {"--rate", "=12"},
      {"--rate", ">12"},
      {"--rate", "<12"},
      {"--rate", "<15"},
      {"--rate", "=18"},
      {"--rate", "<21"},
      {"--rate", ">10"},
      {"--rate", "=19"},
      {"--rate", "<20"},
      {"--rate", "+"},
      {"--service-id", "0x303", "--rate", ">16"},
      {"--service-id", "0x300", "--rate", "=16"},
      {"--service-id", "0x301", "--rate", "<12"},
      {"--service-id", "0x305", "--rate", "+17"},
      {"--service-id", "0x305", "--pkt-life", ">39"},
      {"--service-id", "0x305", "--pkt-life", "<40"},
  };
  // From node004 (8x HDR, the fastest CA link) every destination's link decides: every
  // variant by GetTable; from node007 (12x EDR) the rate variants by Get, whose refusals carry
  // a MAD status. Loopbacks included (node004 to itself runs at 400 Gb/s).
  std::vector<std::string> destinations = {"leaf01", "leaf03"};
  for (int c = 1; c <= kCas; ++c) destinations.push_back(fmt::format("node{:03d}", c));
  for (const std::string& to : destinations) {
    for (const auto& v : variants) {
      Query q{"node004", {"--dlid", lid_of(to)}, true};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
    for (size_t i = 7; i < variants.size(); i += 2) {
      Query q{"node007", {"--get", "--dlid", lid_of(to)}, true};
      q.args.insert(q.args.end(), variants[i].begin(), variants[i].end());
      out.push_back(q);
    }
  }
  // MultiPathRecord between fast ports.
  for (size_t i = 0; i < variants.size(); i += 3) {
    Query q{"node001",
            {"--mpr", "--dgids", gid_of("node004") + "," + gid_of("node007"), "--numb-path", "2"},
            true};
    q.args.insert(q.args.end(), variants[i].begin(), variants[i].end());
    out.push_back(q);
  }
  return out;
}

}  // namespace

class SadSpeedDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() {
    Scenario s{kSpeedPolicy, "", speed_queries};
    s.tree = testbed::mixed_speed_tree(kCas);
    start(s);
  }
};

TEST_F(SadSpeedDifferential, EveryRateEqualsOpenSms) {
  compare_all(250, 100);
}

// The suite binds: OpenSM's own answers carry the fast rates (so a model that stopped at
// 40 Gb/s could not pass), the lowered ones among them.
TEST_F(SadSpeedDifferential, OpenSmsAnswersCoverTheFastRates) {
  std::set<int> rates;
  for (const Outcome& o : *opensm_) {
    if (!o.json.is_object() || !o.json.contains("paths")) continue;
    for (const auto& p : o.json["paths"]) rates.insert(p.value("rate", 0));
  }
  for (int code : {7, 12, 14, 15, 16, 17, 18, 19, 20, 21}) {
    EXPECT_TRUE(rates.contains(code)) << "no answer with rate code " << code;
  }
}

}  // namespace rdmaqos::sad::differential
