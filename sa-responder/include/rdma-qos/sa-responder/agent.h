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
};

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
  std::string ca_;
  int port_ = 0;
  std::atomic<uint64_t> undecodable_{0};
  size_t max_data_ = sa::kSaDataSize;
  std::vector<uint8_t> recv_buffer_;  // umad buffers reused from one MAD to the next
  std::vector<uint8_t> send_buffer_;
};

}  // namespace rdmaqos::sad
