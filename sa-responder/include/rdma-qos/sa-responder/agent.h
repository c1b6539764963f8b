// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA's umad endpoint: registered for management class 0x03 as a responder at one port,
// it receives requests and sends the answers the caller computes. I/O only, no SA logic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/rediscovery_trigger.h"

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

// --issm: on, off, or auto (on only under umad2sim). ibsim delivers unsolicited requests only to
// a port's issm holder; on hardware holding issm sets the port's IsSM capability, so the SM and
// every tool see an SM at the port that never answers SMInfo: right only where the SA takes
// over the SM's own port (and `on` says so).
enum class IssmMode { kAuto, kOn, kOff };
// Whether to hold the port's issm device; `ld_preload` and `maps` as for use_rmpp.
bool hold_issm(IssmMode mode, std::string_view ld_preload, std::string_view maps);
bool hold_issm(IssmMode mode);

// The MAD bytes (no umad header) the agent hands to umad_send for `answer`. Table answers
// (GetTableResp, GetMultiResp) with status 0 carry an active RMPP DATA header; an error keeps
// the header it has (its request's). Without RMPP the SA data is cut
// to the whole records that fit in `max_data` and sent as one MAD (FIRST|LAST, segment 1, the
// PayloadLength of what is sent), as long as its payload. With RMPP the whole answer goes in one
// buffer, the 56-byte header then every record; the kernel segments it and fills segment
// numbers, FIRST/LAST and PayloadLength itself (the sender sets version 1, type DATA, ACTIVE).
std::vector<uint8_t> encode_answer(sa::SaMad answer, bool rmpp, size_t max_data);

// Where the answer to a request goes: the requester's address as its MAD arrived.
struct ReplyAddress {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint8_t sl = 0;
  uint16_t pkey_index = 0;
};

// A request as received: the MAD and who sent it.
struct Request {
  sa::SaMad mad;
  uint16_t slid = 0;  // the requester's LID
  ReplyAddress reply;
};

using Responder = std::function<std::optional<sa::SaMad>(const Request&)>;

// The port calls the agent makes (libibumad's umad_recv and umad_send on the real port), behind
// an interface so that the serving logic is tested with a scripted port.
class MadPort {
 public:
  virtual ~MadPort() = default;
  // Reads one MAD into `buffer` (a umad header, then the MAD): 0 with `length` set to the MAD's
  // bytes, or -errno: ETIMEDOUT, EAGAIN or EINTR when none came, ENOSPC when the MAD needs a
  // buffer of `length` MAD bytes (it stays queued), anything else a failure.
  virtual int recv(std::span<uint8_t> buffer, int& length, std::chrono::milliseconds timeout) = 0;
  // Sends the `length` MAD bytes of `buffer` (umad header first, addressed): 0 or -errno.
  // `response_timeout_ms` 0 for an answer; for a request of ours, how long the MAD layer waits
  // for its response (it matches the response to the request, and hands the request back with
  // a status when none came).
  virtual int send(std::span<uint8_t> buffer, int length, int response_timeout_ms) = 0;
  // False once the device behind the port is gone (unplugged, its driver unloaded): the kernel
  // then flags the port file with POLLERR and fails every call on it.
  virtual bool alive() = 0;
};

// What one serve_one call did.
struct Served {
  enum class Kind {
    kNothing,       // no MAD came within the timeout (or a signal came first)
    kHandled,       // a request answered or deliberately dropped (an undecodable MAD too)
    kReceiveError,  // one receive failed; the port still works
    kSendError,     // the port refused one answer (e.g. its TID still queued): that requester
                    // gets none, as if the MAD were lost
    kUnanswered,    // a request of ours (send_request) came back without a response
  };
  Kind kind = Kind::kNothing;
  std::optional<rdmaqos::Error> error;  // what failed (kReceiveError, kSendError): kTransport
};

class SaAgent {
 public:
  static rdmaqos::Result<std::unique_ptr<SaAgent>> open(const AgentOptions& options);
  // An agent over a port already open and registered (tests give it a scripted one).
  SaAgent(std::unique_ptr<MadPort> port, const AgentOptions& options);
  ~SaAgent();
  SaAgent(const SaAgent&) = delete;
  SaAgent& operator=(const SaAgent&) = delete;

  // Waits up to `timeout` for one MAD and answers it with `responder`. A failure of one MAD
  // (a receive, or the send of its answer) is reported and serving goes on; the error result
  // means the port is gone: its device went away (ENODEV, ENXIO, EBADF, EPIPE, or the port file
  // flagged as failed), or receives kept failing (kMaxReceiveErrorsInARow in a row). A
  // responder that answers later (on another thread) returns nullopt and calls send().
  rdmaqos::Result<Served> serve_one(const Responder& responder, std::chrono::milliseconds timeout);

  // Sends `answer` to the requester of `request`, from any thread, also while another thread
  // waits in serve_one: sends are serialized here. (Concurrent umad_send on one port is safe in
  // itself: the kernel's umad write takes the file's mutex, umad2sim's write wrapper its global
  // one; serializing keeps a MadPort free of that duty.) kHandled, kSendError for a refused
  // answer, or the error result when the port is gone, as serve_one.
  rdmaqos::Result<Served> send(const Request& request, sa::SaMad answer);

  // Sends a request of the SA's own (a SubnAdmSet to the SM) to `to`, from any thread. Its
  // response comes back through serve_one's responder like any MAD; a request the MAD layer
  // gave up on comes back as kUnanswered. kHandled, kSendError, or the error result when the
  // port is gone.
  rdmaqos::Result<Served> send_request(const ReplyAddress& to, sa::SaMad request,
                                       std::chrono::milliseconds response_timeout);

  // Receive failures in a row, with the port still there, that count as the port gone: a port
  // that fails every read would otherwise be served in a busy loop.
  static constexpr int kMaxReceiveErrorsInARow = 100;

  uint16_t lid() const { return lid_; }
  uint16_t sm_lid() const { return sm_lid_; }  // the port's SM LID when opened
  uint8_t sm_sl() const { return sm_sl_; }     // the SL towards it (PortInfo's MasterSMSL)
  // The CA and port the agent answers at (resolved when the options left them open).
  const std::string& ca() const { return ca_; }
  int port() const { return port_; }
  // MADs dropped because they did not decode as SA MADs.
  // Readable from any thread.
  uint64_t undecodable() const { return undecodable_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<MadPort> mad_port_;
  uint16_t lid_ = 0;
  uint16_t sm_lid_ = 0;
  uint8_t sm_sl_ = 0;
  std::string ca_;
  int port_ = 0;
  std::atomic<uint64_t> undecodable_{0};
  size_t max_data_ = sa::kSaDataSize;
  // Builds the umad buffer of `answer` to `to` in `out` (reused by serve_one's thread).
  size_t build(const ReplyAddress& to, sa::SaMad answer, std::vector<uint8_t>& out) const;
  // Sends `length` MAD bytes of `out` under send_mutex_: kHandled, kSendError or port gone.
  rdmaqos::Result<Served> send_built(uint16_t lid, std::vector<uint8_t>& out, size_t length,
                                     int response_timeout_ms = 0);

  std::vector<uint8_t> recv_buffer_;  // umad buffers reused from one MAD to the next
  std::vector<uint8_t> send_buffer_;  // serve_one's thread only
  std::mutex send_mutex_;             // one umad send at a time
  bool rmpp_ = false;
  int receive_errors_in_a_row_ = 0;
};

// The port's LIDs as its sysfs files say now; nullopt when the port cannot be read or is not
// active (it has no LIDs to go by then).
std::optional<PortLids> read_port_lids(const std::string& ca, int port);

}  // namespace rdmaqos::sad
