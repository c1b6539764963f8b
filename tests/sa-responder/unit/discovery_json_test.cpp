// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A discovery that missed tables never replaces the model in force: the refusal, and the
// missing tables surviving the trip from the discovery child (its --dump-fabric --json
// output) to the daemon.
#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/discovery.h"
#include "rdma-qos/sa-responder/discovery_json.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

Discovery complete_discovery() {
  Discovery d;
  d.model = testing::small_model();
  d.self = testing::kA;
  return d;
}

TEST(SadDiscovery, CompleteDiscoveryMayReplaceTheModel) {
  EXPECT_FALSE(replacement_refused(complete_discovery()).has_value());
}

TEST(SadDiscovery, MissingPkeyOrSl2VlTablesRefuseTheReplacement) {
  Discovery d = complete_discovery();
  d.missing = {"no PKey table block 0 from LID 3", "no SL2VL table 1->2 from switch 0x100"};
  auto two = replacement_refused(d);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->code, ErrorCode::kTimeout);
  EXPECT_EQ(two->message,
            "incomplete: 2 tables did not answer (first: no PKey table block 0 from LID 3)");
  d.missing.resize(1);
  auto one = replacement_refused(d);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->message,
            "incomplete: 1 table did not answer (first: no PKey table block 0 from LID 3)");
}

TEST(SadDiscovery, MissingTablesSurviveTheJsonFromTheDiscoveryChild) {
  Discovery d = complete_discovery();
  d.missing = {"no SL2VL table from LID 4"};
  nlohmann::json j = fabric_json(d);
  EXPECT_EQ(j["missing"], nlohmann::json::array({"no SL2VL table from LID 4"}));
  auto back = discovery_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->missing, std::vector<std::string>{"no SL2VL table from LID 4"});
  EXPECT_TRUE(replacement_refused(*back).has_value());
  EXPECT_EQ(back->model.endpoints().size(), 4u);
  EXPECT_EQ(back->model.port(testing::kB).pkeys, (std::vector<uint16_t>{0xFFFF, 0x0010}));
}

TEST(SadDiscovery, CapabilityMasksAndWarningsSurviveTheJson) {
  Discovery d = complete_discovery();
  d.model.nodes[1].ports[1].capability_mask = 0x0050C048;
  d.model.nodes[1].ports[1].capability_mask2 = 0x0020;
  d.warnings = {"CA 0x10 port 1: LinkWidthActive 3 ..."};
  auto back = discovery_from_json(nlohmann::json::parse(fabric_json(d).dump()));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->model.port(testing::kA).capability_mask, 0x0050C048u);
  EXPECT_EQ(back->model.port(testing::kA).capability_mask2, 0x0020);
  EXPECT_EQ(back->warnings, d.warnings);
  EXPECT_FALSE(replacement_refused(*back).has_value());  // a warning does not refuse the model
}

// Output without the field (not from this version's --dump-fabric) is not a model: the
// daemon cannot tell whether it is complete.
TEST(SadDiscovery, JsonWithoutTheMissingListIsNotAModel) {
  nlohmann::json j = fabric_json(complete_discovery());
  ASSERT_TRUE(discovery_from_json(j).has_value());
  j.erase("missing");
  EXPECT_FALSE(discovery_from_json(j).has_value());
}

}  // namespace
}  // namespace rdmaqos::sad
