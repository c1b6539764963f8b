// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad against OpenSM on a mid-size fabric: 300 CAs of every link speed under 19 leaves
// and 4 spines (testbed::mixed_speed_tree), so discovery, the GUID-map order of open ends and
// the rates of long cross-leaf paths are compared at a size beyond the small fat tree.
#include "differential_fixture.h"

namespace rdmaqos::sad::differential {
namespace {

constexpr int kCas = 300;

testbed::FatTreeSpec large_spec() {
  testbed::FatTreeSpec spec = testbed::mixed_speed_tree(kCas);
  spec.cas_per_leaf = 16;
  spec.spines = 4;
  return spec;
}

const testbed::Topology& large_tree() {
  static const testbed::Topology t = testbed::make_fat_tree(large_spec());
  return t;
}

std::string lid_of(const std::string& node) {
  return std::to_string(large_tree().node(node).lid);
}

// The speed suite's ISER-like levels: one rate limit that binds on fast links only.
const std::string kLargePolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: FDR4
    sl: 2
    rate-limit: 12
    packet-life: 40
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x301
    qos-level-name: FDR4
  end-qos-match-rule
end-qos-match-rules
)";

std::vector<Query> large_queries() {
  std::vector<Query> out;
  const std::vector<std::vector<std::string>> variants = {
      {}, {"--service-id", "0x301"}, {"--rate", ">12"}, {"--rate", "<16"}, {"--get"},
  };
  // Sources and destinations spread over the leaves (nodeNNN is on leaf (NNN - 1) / 16 + 1).
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"node001", "node300"}, {"node004", "node150"}, {"node137", "node007"},
      {"node299", "node298"}, {"node200", "leaf19"},  {"sm01", "node256"},
      {"node088", "spine03"}, {"node161", "node161"},
  };
  for (const auto& [from, to] : pairs) {
    for (const auto& v : variants) {
      Query q{from, {"--dlid", lid_of(to)}, true};
      q.args.insert(q.args.end(), v.begin(), v.end());
      out.push_back(q);
    }
  }
  return out;
}

}  // namespace

class SadLargeFabricDifferential : public SadDifferential {
 protected:
  static void SetUpTestSuite() {
    Scenario s{kLargePolicy, "", large_queries};
    s.tree = large_spec();
    start(s);
  }
};

TEST_F(SadLargeFabricDifferential, EveryAnswerOnThreeHundredCasEqualsOpenSms) {
  compare_all(20, 5);
}

}  // namespace rdmaqos::sad::differential
