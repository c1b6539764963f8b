// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A window of LID-routed SMP Gets over libibumad (see smp_window.h).
#include "smp_window.h"

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rdma-qos/sa-client/umad_port.h"

namespace rdmaqos::sad {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMadSize = 256;
constexpr size_t kSmpDataOffset = 64;  // LID-routed SMP: 64 bytes of data after the header
// The low 32 bits of a TID are the sender's (the MAD layer keeps the high ones for its agent);
// a tag in the top byte of those sets ours apart from libibmad's.
constexpr uint64_t kTidTag = 0x5a000000ULL;

void put_be(uint8_t* at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) at[i] = static_cast<uint8_t>(v >> (8 * (width - 1 - i)));
}

uint64_t get_be(const uint8_t* at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v = v << 8 | at[i];
  return v;
}

struct Pending {
  size_t index = 0;
  int sent = 0;
  Clock::time_point deadline;
};

}  // namespace

std::optional<std::vector<std::optional<SmpData>>> smp_get_window(ibmad_port* port,
                                                                  const std::vector<SmpGet>& gets,
                                                                  size_t window, int timeout_ms,
                                                                  int attempts) {
  const int fd = mad_rpc_portid(port);
  const int agent = mad_rpc_class_agent(port, IB_SMI_CLASS);
  if (fd < 0 || agent < 0) return std::nullopt;
  if (timeout_ms <= 0) timeout_ms = 1000;
  window = std::max<size_t>(window, 1);
  attempts = std::max(attempts, 1);

  std::unique_ptr<uint8_t[]> send_buf(new uint8_t[umad_size() + kMadSize]());
  std::unique_ptr<uint8_t[]> recv_buf(new uint8_t[umad_size() + kMadSize]());
  std::vector<std::optional<SmpData>> out(gets.size());
  std::vector<Pending> in_flight;  // at most `window`
  size_t next = 0, finished = 0;
  uint64_t tid_counter = 0;
  std::vector<uint64_t> tid_of(gets.size(), 0);

  auto send = [&](Pending& p) {
    const SmpGet& g = gets[p.index];
    std::memset(send_buf.get(), 0, umad_size() + kMadSize);
    auto* mad = static_cast<uint8_t*>(umad_get_mad(send_buf.get()));
    mad[0] = 1;             // base version
    mad[1] = IB_SMI_CLASS;  // LID-routed subnet management
    mad[2] = 1;             // class version
    mad[3] = IB_MAD_METHOD_GET;
    const uint64_t tid = kTidTag | (++tid_counter & 0xFFFFFF);
    tid_of[p.index] = tid;
    put_be(mad + 8, tid, 8);
    put_be(mad + 16, g.attr, 2);
    put_be(mad + 20, g.mod, 4);
    umad_set_addr(send_buf.get(), g.lid, 0, 0, 0);
    ++p.sent;
    p.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    return umad_send(fd, agent, send_buf.get(), static_cast<int>(kMadSize), 0, 0) == 0;
  };

  while (finished < gets.size()) {
    while (in_flight.size() < window && next < gets.size()) {
      Pending p{next++, 0, {}};
      if (!send(p)) return std::nullopt;
      in_flight.push_back(p);
    }
    int len = static_cast<int>(kMadSize);
    int rc = umad_recv(fd, recv_buf.get(), &len, 10);
    if (rc >= 0 && umad_status(recv_buf.get()) == 0) {
      const auto* mad = static_cast<const uint8_t*>(umad_get_mad(recv_buf.get()));
      const uint64_t tid = get_be(mad + 8, 8) & 0xFFFFFFFFULL;
      const uint16_t status = static_cast<uint16_t>(get_be(mad + 4, 2));
      for (size_t i = 0; i < in_flight.size(); ++i) {
        if (tid_of[in_flight[i].index] != tid) continue;
        if ((status & 0x7FFF) == 0) {
          SmpData d{};
          std::memcpy(d.data(), mad + kSmpDataOffset, d.size());
          out[in_flight[i].index] = d;
        }
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
        ++finished;
        break;
      }
    }
    // Resend what timed out; give up after `attempts`.
    const auto now = Clock::now();
    for (size_t i = 0; i < in_flight.size();) {
      if (now < in_flight[i].deadline) {
        ++i;
        continue;
      }
      if (in_flight[i].sent >= attempts) {
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
        ++finished;
        continue;
      }
      if (!send(in_flight[i])) return std::nullopt;
      ++i;
    }
  }
  return out;
}

// Kept in one map for the whole process (see smp_window.h).
ibmad_port* smp_port(const std::string& ca, int port) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, ibmad_port*> ports;
  std::lock_guard lock(mutex);
  auto& slot = ports[{ca, port}];
  if (slot == nullptr) {
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
    slot =
        mad_rpc_open_port(ca.empty() ? nullptr : const_cast<char*>(ca.c_str()), port, classes, 2);
    // Kept open for the process's life: the re-discovery children rdma-qos-sad forks must not
    // inherit it. A port that stays inheritable only leaks, so a refusal does not stop discovery.
    if (slot != nullptr) sa::set_close_on_exec(mad_rpc_portid(slot));
  }
  return slot;
}

}  // namespace rdmaqos::sad
