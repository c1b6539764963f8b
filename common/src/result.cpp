// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Names of the error codes (see result.h).
#include "rdma-qos/common/result.h"

namespace rdmaqos {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTruncated: return "truncated";
    case ErrorCode::kMalformed: return "malformed";
    case ErrorCode::kMadStatus: return "mad-status";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kTransport: return "transport";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
  }
  return "unknown";
}

}  // namespace rdmaqos
