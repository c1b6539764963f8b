// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// GoogleTest matchers for the project's Result, so tests read as specifications:
//   EXPECT_THAT(client.path_records(q), Succeeded());
//   EXPECT_THAT(decode_sa_mad(bytes), FailedWith(ErrorCode::kTruncated));
// On a mismatch they print the error's code and message, or that it succeeded.
#pragma once

#include <gmock/gmock.h>

#include "rdma-qos/common/result.h"

namespace rdmaqos::testing {

MATCHER(Succeeded, negation ? "failed" : "succeeded") {
  if (arg.ok()) return true;
  *result_listener << "failed with " << error_code_name(arg.error().code) << ": "
                   << arg.error().message;
  return false;
}

MATCHER_P(FailedWith, code,
          std::string(negation ? "did not fail with " : "failed with ") + error_code_name(code)) {
  if (arg.ok()) {
    *result_listener << "succeeded";
    return false;
  }
  if (arg.error().code == code) return true;
  *result_listener << "failed with " << error_code_name(arg.error().code) << ": "
                   << arg.error().message;
  return false;
}

}  // namespace rdmaqos::testing
