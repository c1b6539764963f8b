// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The umad port files our programs open, made close-on-exec: libibumad's umad_open_port and
// libibmad's mad_rpc_open_port take no flags, so without this every child a program runs
// (rdma-qos-sad's re-discovery, whatever a host program with the preload starts) would inherit
// the port and the MAD agents registered on it.
#pragma once

#include <string>

#include "rdma-qos/common/result.h"

namespace rdmaqos::sa {

// Marks `fd` close-on-exec. True when done, and when `fd` is no open file of this process:
// umad2sim (the simulator's libibumad shim) gives ports numbers that are no file descriptors,
// which no child can inherit. False, with errno set, when fcntl refuses an open one.
bool set_close_on_exec(int fd);

// umad_open_port, then close-on-exec: the port id (a file descriptor) or the error.
Result<int> open_umad_port(const std::string& ca, int port);

}  // namespace rdmaqos::sa
