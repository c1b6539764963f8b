// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// OpenSM's use_original_extended_sa_rates_only in the answer engine: a record's rate cut to the
// original extended rates (up to 12x EDR), for hosts whose drivers do not know rate codes 19-22.
#include <gtest/gtest.h>

#include "rdma-qos/sa-responder/answer.h"
#include "test_fabric.h"

namespace rdmaqos::sad {
namespace {

using testing::kA;
using testing::kC;

// a to c over links of `rate` (their ports and the switch ports between them).
FabricModel model_with_rate(uint8_t rate, bool original_only) {
  FabricModel f = testing::small_model();
  f.nodes[1].ports[1].rate = rate;
  f.nodes[3].ports[1].rate = rate;
  f.nodes[0].ports[1].rate = rate;
  f.nodes[0].ports[3].rate = rate;
  f.original_extended_rates_only = original_only;
  return f;
}

uint8_t rate_a_to_c(const FabricModel& f) {
  AnswerContext ctx;
  ctx.fabric = &f;
  PairAnswer a = answer_pair(ctx, PathRequest{}, kA, kC);
  EXPECT_TRUE(a.record);
  return a.record ? a.record->rate : 0;
}

TEST(AnswerRateOption, OriginalRatesOnlyCutsTheNewCodesToTheirOriginalNeighbours) {
  EXPECT_EQ(rate_a_to_c(model_with_rate(19, true)), 15);  // 28G -> 25G
  EXPECT_EQ(rate_a_to_c(model_with_rate(20, true)), 7);   // 50G -> 40G
  EXPECT_EQ(rate_a_to_c(model_with_rate(21, true)), 18);  // 400G -> 300G
  EXPECT_EQ(rate_a_to_c(model_with_rate(22, true)), 18);  // 600G -> 300G
  EXPECT_EQ(rate_a_to_c(model_with_rate(18, true)), 18);  // 300G stays
  EXPECT_EQ(rate_a_to_c(model_with_rate(7, true)), 7);
}

TEST(AnswerRateOption, WithoutItPortsThatAnnounceTheNewRatesGetThem) {
  EXPECT_EQ(rate_a_to_c(model_with_rate(20, false)), 20);
  EXPECT_EQ(rate_a_to_c(model_with_rate(22, false)), 22);
}

}  // namespace
}  // namespace rdmaqos::sad
