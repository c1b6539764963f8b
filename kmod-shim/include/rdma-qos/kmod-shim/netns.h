// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Whether this process shares the initial network namespace, the only one the kernel sends
// path queries to (sa_query.c asks init_net's listeners) and takes SET_TIMEOUT from.
#pragma once

#include <string>

namespace rdmaqos::kmod {

enum class NetnsState { kInitial, kOther, kUnknown };

struct NetnsCheck {
  NetnsState state = NetnsState::kUnknown;
  std::string detail;  // the two namespaces, or why they could not be compared
};

// Compares the namespace files `self` and `initial` (default: this process's and PID 1's) by
// device and inode. PID 1's is unreadable without ptrace access to it (a sandboxed service, a
// container): kUnknown then, never an error.
NetnsCheck check_initial_netns(const std::string& self = "/proc/self/ns/net",
                               const std::string& initial = "/proc/1/ns/net");

}  // namespace rdmaqos::kmod
