// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one result type: a value or a structured error.
#include "rdma-qos/common/result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "rdma-qos/testbed/result_matchers.h"

namespace rdmaqos {
namespace {

TEST(Result, HoldsTheValue) {
  Result<std::string> r = std::string("path");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "path");
  EXPECT_EQ(r->size(), 4u);
}

TEST(Result, HoldsTheErrorWithCodeMessageAndStatus) {
  Result<int> r = make_error(ErrorCode::kMadStatus, "SA answered SA_NO_RECORDS", 0x0300);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kMadStatus);
  EXPECT_EQ(r.error().message, "SA answered SA_NO_RECORDS");
  EXPECT_EQ(r.error().mad_status, 0x0300);
}

TEST(Result, ErrorCodesHaveStableNames) {
  EXPECT_STREQ(error_code_name(ErrorCode::kTruncated), "truncated");
  EXPECT_STREQ(error_code_name(ErrorCode::kMalformed), "malformed");
  EXPECT_STREQ(error_code_name(ErrorCode::kMadStatus), "mad-status");
  EXPECT_STREQ(error_code_name(ErrorCode::kTimeout), "timeout");
  EXPECT_STREQ(error_code_name(ErrorCode::kTransport), "transport");
  EXPECT_STREQ(error_code_name(ErrorCode::kInvalidArgument), "invalid-argument");
  EXPECT_STREQ(error_code_name(ErrorCode::kNotFound), "not-found");
  EXPECT_STREQ(error_code_name(ErrorCode::kBusy), "busy");
}

using testing::FailedWith;
using testing::Succeeded;

Result<void> check(bool fine) {
  if (!fine) return make_error(ErrorCode::kInvalidArgument, "not fine");
  return {};
}

TEST(Result, VoidIsSuccessOrAnError) {
  EXPECT_THAT(check(true), Succeeded());
  EXPECT_THAT(check(false), FailedWith(ErrorCode::kInvalidArgument));
  EXPECT_THAT(check(false), ::testing::Not(FailedWith(ErrorCode::kTimeout)));
  EXPECT_THAT(check(true), ::testing::Not(FailedWith(ErrorCode::kInvalidArgument)));
}

TEST(Result, MatchersExplainWhatHappened) {
  ::testing::StringMatchResultListener listener;
  Result<int> r = make_error(ErrorCode::kTimeout, "no answer in 3 attempts");
  EXPECT_FALSE(::testing::ExplainMatchResult(Succeeded(), r, &listener));
  EXPECT_EQ(listener.str(), "failed with timeout: no answer in 3 attempts");
}

TEST(Result, AnErrorMovedOnIsTheNewOwnersToExamine) {
  Result<int> a = make_error(ErrorCode::kMalformed, "x");
  Result<int> b = std::move(a);
  EXPECT_FALSE(b.ok());  // a is not checked any more; b now is
}

#ifdef RDMA_QOS_CHECK_RESULTS
TEST(ResultDeathTest, AnErrorNobodyExaminedAbortsInDebugBuilds) {
  EXPECT_DEATH({ Result<int> r = make_error(ErrorCode::kTransport, "send failed"); },
               "an error nobody examined: transport: send failed");
}
#endif

TEST(Result, ASuccessNeedsNoLook) {
  { Result<int> r = 5; }
  { Result<void> r; }
  SUCCEED();
}

}  // namespace
}  // namespace rdmaqos
