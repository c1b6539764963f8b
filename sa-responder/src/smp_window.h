// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMP Gets, LID-routed or directed-route, with many in flight at once, on the umad port and SMI
// agents libibmad already opened (no second port: umad2sim crashes a process that juggles
// several). libibmad's own calls are one at a time; the switches' SL2VL tables (one per
// input/output port pair) are most of a discovery's SMPs, and the incremental discovery's check
// of the whole fabric is thousands of directed-route Gets.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct ibmad_port;

namespace rdmaqos::sad {

struct SmpGet {
  uint16_t lid = 0;  // LID-routed (directed false)
  uint16_t attr = 0;
  uint32_t mod = 0;
  // Directed route from the local port: the output port of each hop (path[0] is the first hop;
  // empty: the local node itself).
  bool directed = false;
  std::vector<uint8_t> path{};
};

// Longest directed route an SMP carries (IBA: 64 path bytes, the first unused).
constexpr size_t kMaxDirectedHops = 63;

using SmpData = std::array<uint8_t, 64>;

// The SMP port for (ca, port) (empty ca: the first), opened once for the life of the process and
// shared by every caller in it: umad2sim crashes a process that closes a port and later receives
// on another (its receive thread follows the stale device). Close-on-exec. Null when it cannot be
// opened.
ibmad_port* smp_port(const std::string& ca, int port);

// One SMP as it goes on the wire (a whole MAD).
constexpr size_t kSmpMadBytes = 256;
using SmpMad = std::array<uint8_t, kSmpMadBytes>;

// The SubnGet MAD of `g`: transaction ID `tid` (its low 32 bits), M_Key `m_key` (IBA 14.2.4:
// a port whose M_Key protection is on checks it; 0 where the subnet has none).
SmpMad encode_smp_get(const SmpGet& g, uint64_t tid, uint64_t m_key);

// An answer as the window reads it: its transaction ID (low 32 bits), MAD status and data.
struct SmpReply {
  uint64_t tid = 0;
  uint16_t status = 0;
  SmpData data{};
};

// Where a window of SMPs goes: the umad port, or a fake in tests that counts what is in flight.
class SmpWire {
 public:
  virtual ~SmpWire() = default;
  // False when the Get cannot be sent (the window gives up: the caller asks one at a time).
  virtual bool send(const SmpGet& g, const SmpMad& mad) = 0;
  // One answer, waiting at most `wait_ms`; nullopt when none came.
  virtual std::optional<SmpReply> receive(int wait_ms) = 0;
};

struct SmpWindowOptions {
  size_t window = 1;  // Gets outstanding at once, at most
  int timeout_ms = 1000;
  int attempts = 1;  // sends of one Get in all before it counts as unanswered
  uint64_t m_key = 0;
};

// Sends `gets` over `wire` with at most `options.window` outstanding, each sent again up to
// `attempts` times in all after `timeout_ms` without an answer; results in request order,
// nullopt for no good answer. nullopt as a whole when a send fails. `resent` (when given) counts
// the Gets sent again.
std::optional<std::vector<std::optional<SmpData>>> run_smp_window(SmpWire& wire,
                                                                  const std::vector<SmpGet>& gets,
                                                                  const SmpWindowOptions& options,
                                                                  int* resent = nullptr);

// run_smp_window on the umad port and SMI agents of `port`. nullopt as a whole when the port
// cannot be used this way (the caller then asks one at a time).
std::optional<std::vector<std::optional<SmpData>>> smp_get_window(
    ibmad_port* port, const std::vector<SmpGet>& gets, size_t window, int timeout_ms, int attempts,
    int* resent = nullptr, uint64_t m_key = 0);

// Where discovery's SMP Gets go: the port (UmadSmpTransport), or a simulated fabric in tests.
class SmpTransport {
 public:
  virtual ~SmpTransport() = default;
  // Every Get's answer in request order; nullopt where none came (after the retries).
  virtual std::vector<std::optional<SmpData>> get(const std::vector<SmpGet>& gets) = 0;
  // Gets sent again so far.
  virtual int resent() const { return 0; }
};

// The order in which to send `gets` (indexes into it): round-robin over their destinations
// (LID or directed route), each destination's Gets in their order.
std::vector<size_t> interleaved(const std::vector<SmpGet>& gets);

// SMP Gets on an open libibmad port: a window of `window` (smp_get_window) over the Gets
// interleaved by destination, or one at a time through libibmad where the port cannot do that;
// every Get carries `m_key`.
class UmadSmpTransport : public SmpTransport {
 public:
  UmadSmpTransport(ibmad_port* port, size_t window, int timeout_ms, int attempts,
                   uint64_t m_key = 0)
      : port_(port), window_(window), timeout_ms_(timeout_ms), attempts_(attempts), m_key_(m_key) {}
  std::vector<std::optional<SmpData>> get(const std::vector<SmpGet>& gets) override;
  int resent() const override { return resent_; }

 private:
  ibmad_port* port_;
  size_t window_;
  int timeout_ms_;
  int attempts_;
  uint64_t m_key_;
  int resent_ = 0;
};

}  // namespace rdmaqos::sad
