// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// LID-routed SMP Gets with many in flight at once, on the umad port and SMI agent libibmad
// already opened (no second port: umad2sim crashes a process that juggles several). libibmad's
// own calls are one at a time; the switches' SL2VL tables (one per input/output port pair) are
// most of a discovery's SMPs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct ibmad_port;

namespace rdmaqos::sad {

struct SmpGet {
  uint16_t lid = 0;
  uint16_t attr = 0;
  uint32_t mod = 0;
};

using SmpData = std::array<uint8_t, 64>;

// The SMP port for (ca, port) (empty ca: the first), opened once for the life of the process and
// shared by every caller in it: umad2sim crashes a process that closes a port and later receives
// on another (its receive thread follows the stale device). Close-on-exec. Null when it cannot be
// opened.
ibmad_port* smp_port(const std::string& ca, int port);

// Sends `gets` with at most `window` outstanding, each sent again up to `attempts` times in all
// after `timeout_ms` without an answer; results in request order, nullopt for no good answer.
// nullopt as a whole when the port cannot be used this way (the caller then asks one at a time).
std::optional<std::vector<std::optional<SmpData>>> smp_get_window(ibmad_port* port,
                                                                  const std::vector<SmpGet>& gets,
                                                                  size_t window, int timeout_ms,
                                                                  int attempts);

}  // namespace rdmaqos::sad
