// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The answering bounds (AnswerLimits, answer.h) that rdma-qos-sad and the OpenSM plugin apply
// unless told otherwise, in a header of their own so that option parsers need nothing else.
#pragma once

#include <chrono>
#include <cstddef>

namespace rdmaqos::sad {

// The most PathRecords one table answer carries: 16 MiB of records.
inline constexpr size_t kDefaultMaxRecords = 262144;
// The time from a request's arrival to its answer.
inline constexpr std::chrono::milliseconds kDefaultAnswerTimeLimit{2000};

}  // namespace rdmaqos::sad
