// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client's results are the project's one result type (rdma-qos/common/result.h), named
// in this namespace too so the client's API reads sa::Result, sa::Error.
#pragma once

#include "rdma-qos/common/result.h"

namespace rdmaqos::sa {

using rdmaqos::Error;
using rdmaqos::error_code_name;
using rdmaqos::ErrorCode;
using rdmaqos::make_error;
using rdmaqos::Ok;
using rdmaqos::Result;

}  // namespace rdmaqos::sa
