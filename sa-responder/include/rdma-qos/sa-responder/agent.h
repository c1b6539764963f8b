// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA's umad endpoint: registered for management class 0x03 as a responder at one port,
// it receives requests and sends the answers the caller computes. I/O only, no SA logic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/result.h"

namespace rdmaqos::sad {

struct AgentOptions {
  std::string ca;  // empty: the first CA
  int port = 0;    // 0: the first active port
  // Hold the port's issm device. ibsim delivers unsolicited requests only to issm holders; on
  // hardware it sets the port's IsSM bit, so take it only where the SA replaces the SM.
  bool issm = true;
  // Largest SA data of one response. 200 (one MAD) where no RMPP is available (umad2sim);
  // longer answers are cut to whole records.
  size_t max_data = sa::kSaDataSize;
  // Register with RMPP version 1 and send whole table answers: the kernel MAD layer splits
  // them into segments (and handles the requester's ACKs). `max_data` then does not apply.
  bool rmpp = false;
};

// --rmpp: on, off, or auto (off under ibsim's umad2sim, which cannot do RMPP, else on).
enum class RmppMode { kAuto, kOn, kOff };

// Whether the agent uses RMPP. In auto mode umad2sim is recognised by its library's name
// ("umad2sim") in LD_PRELOAD or among the process's mappings (/proc/self/maps text).
bool use_rmpp(RmppMode mode, std::string_view ld_preload, std::string_view maps);
// The same for this process (reads LD_PRELOAD and /proc/self/maps).
bool use_rmpp(RmppMode mode);

// The MAD bytes (no umad header) the agent hands to umad_send for `answer`. Table answers
// (GetTableResp, GetMultiResp) with status 0 carry an active RMPP DATA header; an error keeps
// the header it has (its request's). Without RMPP the SA data is cut
// to the whole records that fit in `max_data` and sent as one MAD (FIRST|LAST, segment 1, the
// PayloadLength of what is sent), as long as its payload. With RMPP the whole answer goes in one
// buffer, the 56-byte header then every record; the kernel segments it and fills segment
// numbers, FIRST/LAST and PayloadLength itself (the sender sets version 1, type DATA, ACTIVE).
std::vector<uint8_t> encode_answer(sa::SaMad answer, bool rmpp, size_t max_data);

// A request as received: the MAD and who sent it.
struct Request {
  sa::SaMad mad;
  uint16_t slid = 0;  // the requester's LID
};

using Responder = std::function<std::optional<sa::SaMad>(const Request&)>;

class SaAgent {
 public:
  static sa::Result<std::unique_ptr<SaAgent>> open(const AgentOptions& options);
  ~SaAgent();
  SaAgent(const SaAgent&) = delete;
  SaAgent& operator=(const SaAgent&) = delete;

  // Waits up to `timeout` for one request and answers it with `responder`. Returns true when a
  // request was handled (answered or deliberately dropped), false on timeout (or, with a zero
  // timeout, when none is waiting); an undecodable MAD is dropped and counts as handled.
  sa::Result<bool> serve_one(const Responder& responder, std::chrono::milliseconds timeout);

  uint16_t lid() const { return lid_; }
  uint16_t sm_lid() const { return sm_lid_; }  // the port's SM LID when opened
  // The CA and port the agent answers at (resolved when the options left them open).
  const std::string& ca() const { return ca_; }
  int port() const { return port_; }
  // MADs dropped because they did not decode as SA MADs.
  // Readable from any thread.
  uint64_t undecodable() const { return undecodable_.load(std::memory_order_relaxed); }

 private:
  SaAgent() = default;
  int portid_ = -1;
  int agent_ = -1;
  int issm_fd_ = -1;
  uint16_t lid_ = 0;
  uint16_t sm_lid_ = 0;
  std::string ca_;
  int port_ = 0;
  std::atomic<uint64_t> undecodable_{0};
  size_t max_data_ = sa::kSaDataSize;
  std::vector<uint8_t> recv_buffer_;  // umad buffers reused from one MAD to the next
  std::vector<uint8_t> send_buffer_;
  bool rmpp_ = false;
};

}  // namespace rdmaqos::sad
