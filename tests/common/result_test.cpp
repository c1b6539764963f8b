// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one result type: a value or a structured error.
#include "rdma-qos/common/result.h"

#include <gtest/gtest.h>

#include <string>

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
}

}  // namespace
}  // namespace rdmaqos
