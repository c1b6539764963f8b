// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Names of the error codes, and what a debug build does with an error nobody looked at (see
// result.h).
#include "rdma-qos/common/result.h"

#include <cstdio>
#include <cstdlib>

namespace rdmaqos {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTruncated: return "truncated";
    case ErrorCode::kMalformed: return "malformed";
    case ErrorCode::kMadStatus: return "mad-status";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kTransport: return "transport";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kBusy: return "busy";
  }
  return "unknown";
}

namespace detail {

void unexamined_error(const Error& error) {
  std::fprintf(stderr, "rdma-qos: an error nobody examined: %s: %s\n", error_code_name(error.code),
               error.message.c_str());
  std::abort();
}

}  // namespace detail

}  // namespace rdmaqos
