// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How the client reaches an SA: an interface over "send a MAD, receive a MAD" so tests inject
// a fake, and its libibumad implementation (kernel RMPP on real hardware, umad2sim on ibsim).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/gid.h"

namespace rdmaqos::sa {

struct PortAttributes {
  std::string ca;
  int port = 0;
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t sm_sl = 0;
  Gid gid{};  // port GID 0 (subnet prefix + port GUID)
};

struct ReceivedMad {
  // 0, or the errno the umad layer reports for a request it gave up on (ETIMEDOUT: the
  // kernel's own response timer expired); `bytes` then echoes our request.
  int status = 0;
  std::vector<uint8_t> bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one request MAD to `dlid` (SA QP1, Q_Key 0x80010000). `response_timeout` lets the
  // kernel match the response to the request (responses to unknown requests are dropped).
  virtual Result<Ok> send(std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl,
                          std::chrono::milliseconds response_timeout) = 0;
  // Waits up to `timeout` for one MAD; nullopt when none arrived.
  virtual Result<std::optional<ReceivedMad>> receive(std::chrono::milliseconds timeout) = 0;
  // The port as last read, and a fresh read (to notice an SM LID change).
  virtual const PortAttributes& port() const = 0;
  virtual Result<PortAttributes> refresh_port() = 0;
};

struct UmadOptions {
  std::string ca;  // empty: the first CA with an active InfiniBand port
  int port = 0;    // 0: the first active InfiniBand port of that CA
};

// Opens the port and registers an SA agent (class 0x03 version 2) with RMPP, so the kernel
// reassembles GetTable/GetMulti responses and segments RMPP-active requests.
Result<std::unique_ptr<Transport>> open_umad_transport(const UmadOptions& options);

}  // namespace rdmaqos::sa
