// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading a file an administrator or the environment named (rdma-qos.conf, a policy): only a
// regular file, never blocking on a FIFO or device, and never more than a stated size.
#pragma once

#include <cstddef>
#include <string>

#include "rdma-qos/common/result.h"

namespace rdmaqos::config {

inline constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;   // rdma-qos.conf: 1 MiB
inline constexpr size_t kMaxPolicyFileBytes = size_t{16} << 20;  // a policy file: 16 MiB

// The whole content of `path`, or why not. The open is non-blocking and close-on-exec, so a
// FIFO with no writer, a directory or a device is refused at once instead of hanging the
// caller (every process the preload is loaded into reads these files at start). /dev/null
// reads as an empty file.
// Errors: the message says why without the path, e.g. "it is not a regular file" (callers
// name the file); kNotFound when the file does not exist (a default path may be absent),
// kInvalidArgument for a directory, device, FIFO or a file over `max_bytes`, kTransport when
// the system refuses the open, stat or read.
Result<std::string> read_regular_file(const std::string& path, size_t max_bytes);

}  // namespace rdmaqos::config
