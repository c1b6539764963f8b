// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A daemon's side of systemd's service manager protocol (sd_notify(3)): readiness, reloads and
// a one-line status. Without libsystemd at build time, or outside a Type=notify unit
// (no NOTIFY_SOCKET), every call does nothing.
#pragma once

#include <string_view>

namespace rdmaqos::common {

// READY=1 with STATUS=status: start-up is done and the daemon serves what status says.
void notify_ready(std::string_view status);
// RELOADING=1: a reload (SIGHUP) began; notify_ready ends it.
void notify_reloading();
// STATUS=status alone.
void notify_status(std::string_view status);
// STOPPING=1.
void notify_stopping();
// Whether this build can talk to systemd (libsystemd was found).
bool notify_supported();

// The project's version ("0.1.0"), for every program's --version.
const char* version();

}  // namespace rdmaqos::common
