// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A window of SMP Gets, LID-routed or directed-route, over libibumad (see smp_window.h).
#include "smp_window.h"

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <algorithm>
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

constexpr size_t kSmpDataOffset = 64;  // both SMP kinds: 64 bytes of data after the header
constexpr size_t kDrPathOffset = 128;  // directed route: the initial path
constexpr uint16_t kPermissiveLid = 0xFFFF;
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

constexpr size_t kMKeyOffset = 24;  // both SMP kinds: M_Key after the common MAD header

struct Pending {
  size_t index = 0;
  int sent = 0;
  Clock::time_point deadline;
};

// The umad port's SMI agents (LID-routed and directed-route).
class UmadWire : public SmpWire {
 public:
  UmadWire(int fd, int agent, int dr_agent)
      : fd_(fd),
        agent_(agent),
        dr_agent_(dr_agent),
        send_buf_(new uint8_t[umad_size() + kSmpMadBytes]()),
        recv_buf_(new uint8_t[umad_size() + kSmpMadBytes]()) {}

  bool send(const SmpGet& g, const SmpMad& mad) override {
    std::memset(send_buf_.get(), 0, umad_size() + kSmpMadBytes);
    std::memcpy(umad_get_mad(send_buf_.get()), mad.data(), mad.size());
    umad_set_addr(send_buf_.get(), g.directed ? kPermissiveLid : g.lid, 0, 0, 0);
    return umad_send(fd_, g.directed ? dr_agent_ : agent_, send_buf_.get(),
                     static_cast<int>(kSmpMadBytes), 0, 0) == 0;
  }

  std::optional<SmpReply> receive(int wait_ms) override {
    int len = static_cast<int>(kSmpMadBytes);
    if (umad_recv(fd_, recv_buf_.get(), &len, wait_ms) < 0 || umad_status(recv_buf_.get()) != 0)
      return std::nullopt;
    const auto* mad = static_cast<const uint8_t*>(umad_get_mad(recv_buf_.get()));
    SmpReply r;
    r.tid = get_be(mad + 8, 8) & 0xFFFFFFFFULL;
    r.status = static_cast<uint16_t>(get_be(mad + 4, 2));
    std::memcpy(r.data.data(), mad + kSmpDataOffset, r.data.size());
    return r;
  }

 private:
  int fd_, agent_, dr_agent_;
  std::unique_ptr<uint8_t[]> send_buf_, recv_buf_;
};

}  // namespace

SmpMad encode_smp_get(const SmpGet& g, uint64_t tid, uint64_t m_key) {
  SmpMad mad{};
  mad[0] = 1;  // base version
  mad[1] = g.directed ? IB_SMI_DIRECT_CLASS : IB_SMI_CLASS;
  mad[2] = 1;  // class version
  mad[3] = IB_MAD_METHOD_GET;
  put_be(mad.data() + 8, tid, 8);
  put_be(mad.data() + 16, g.attr, 2);
  put_be(mad.data() + 20, g.mod, 4);
  put_be(mad.data() + kMKeyOffset, m_key, 8);
  if (g.directed) {
    // Status (D bit 0: outbound) and hop pointer 0; hop count; DrSLID and DrDLID permissive
    // (the whole route directed); the initial path from byte 1 on.
    mad[7] = static_cast<uint8_t>(g.path.size());
    put_be(mad.data() + 32, kPermissiveLid, 2);
    put_be(mad.data() + 34, kPermissiveLid, 2);
    for (size_t i = 0; i < g.path.size() && i < kMaxDirectedHops; ++i)
      mad[kDrPathOffset + 1 + i] = g.path[i];
  }
  return mad;
}

std::optional<std::vector<std::optional<SmpData>>> run_smp_window(SmpWire& wire,
                                                                  const std::vector<SmpGet>& gets,
                                                                  const SmpWindowOptions& options,
                                                                  int* resent) {
  const int timeout_ms = options.timeout_ms > 0 ? options.timeout_ms : 1000;
  const size_t window = std::max<size_t>(options.window, 1);
  const int attempts = std::max(options.attempts, 1);

  std::vector<std::optional<SmpData>> out(gets.size());
  std::vector<Pending> in_flight;  // at most `window`
  size_t next = 0, finished = 0;
  uint64_t tid_counter = 0;
  std::vector<uint64_t> tid_of(gets.size(), 0);

  auto send = [&](Pending& p) {
    const uint64_t tid = kTidTag | (++tid_counter & 0xFFFFFF);
    tid_of[p.index] = tid;
    if (p.sent > 0 && resent != nullptr) ++*resent;
    ++p.sent;
    p.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    return wire.send(gets[p.index], encode_smp_get(gets[p.index], tid, options.m_key));
  };

  while (finished < gets.size()) {
    while (in_flight.size() < window && next < gets.size()) {
      Pending p{next++, 0, {}};
      if (!send(p)) return std::nullopt;
      in_flight.push_back(p);
    }
    if (auto reply = wire.receive(10)) {
      for (size_t i = 0; i < in_flight.size(); ++i) {
        if (tid_of[in_flight[i].index] != reply->tid) continue;
        if ((reply->status & 0x7FFF) == 0) out[in_flight[i].index] = reply->data;
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

std::optional<std::vector<std::optional<SmpData>>> smp_get_window(ibmad_port* port,
                                                                  const std::vector<SmpGet>& gets,
                                                                  size_t window, int timeout_ms,
                                                                  int attempts, int* resent,
                                                                  uint64_t m_key) {
  const int fd = mad_rpc_portid(port);
  const int agent = mad_rpc_class_agent(port, IB_SMI_CLASS);
  const int dr_agent = mad_rpc_class_agent(port, IB_SMI_DIRECT_CLASS);
  if (fd < 0 || agent < 0) return std::nullopt;
  for (const SmpGet& g : gets) {
    if (g.directed && (dr_agent < 0 || g.path.size() > kMaxDirectedHops)) return std::nullopt;
  }
  UmadWire wire(fd, agent, dr_agent);
  return run_smp_window(wire, gets, {window, timeout_ms, attempts, m_key}, resent);
}

std::vector<size_t> interleaved(const std::vector<SmpGet>& gets) {
  // The destination of each Get: its LID, or its directed route.
  std::map<std::pair<uint32_t, std::vector<uint8_t>>, size_t> seen;  // -> Gets there so far
  std::vector<std::pair<size_t, size_t>> keyed;                      // (turn, index)
  keyed.reserve(gets.size());
  for (size_t i = 0; i < gets.size(); ++i) {
    const SmpGet& g = gets[i];
    auto key = g.directed ? std::make_pair(0x10000u, g.path)
                          : std::make_pair(uint32_t{g.lid}, std::vector<uint8_t>{});
    keyed.emplace_back(seen[key]++, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<size_t> order;
  order.reserve(keyed.size());
  for (const auto& k : keyed) order.push_back(k.second);
  return order;
}

std::vector<std::optional<SmpData>> UmadSmpTransport::get(const std::vector<SmpGet>& gets) {
  // Round-robin over the destinations, so that the Gets in flight go to many nodes (a switch's
  // SMA answers one at a time, and queues only so many).
  const std::vector<size_t> order = interleaved(gets);
  std::vector<SmpGet> sent;
  sent.reserve(gets.size());
  for (size_t i : order) sent.push_back(gets[i]);
  if (auto many = smp_get_window(port_, sent, window_, timeout_ms_, attempts_, &resent_, m_key_)) {
    std::vector<std::optional<SmpData>> out(gets.size());
    for (size_t k = 0; k < order.size(); ++k) out[order[k]] = (*many)[k];
    return out;
  }
  // One at a time through libibmad, with the same M_Key.
  smp_mkey_set(port_, m_key_);
  std::vector<std::optional<SmpData>> out(gets.size());
  for (size_t i = 0; i < gets.size(); ++i) {
    const SmpGet& g = gets[i];
    ib_portid_t id{};
    if (g.directed) {
      if (g.path.size() > kMaxDirectedHops) continue;
      id.drpath.cnt = static_cast<int>(g.path.size());
      for (size_t h = 0; h < g.path.size(); ++h) id.drpath.p[h + 1] = g.path[h];
    } else {
      ib_portid_set(&id, g.lid, 0, 0);
    }
    uint8_t buf[IB_SMP_DATA_SIZE];
    for (int a = 0; a < std::max(attempts_, 1); ++a) {
      if (a > 0) ++resent_;
      if (smp_query_via(buf, &id, g.attr, g.mod, static_cast<unsigned>(timeout_ms_), port_) !=
          nullptr) {
        SmpData d{};
        std::memcpy(d.data(), buf, d.size());
        out[i] = d;
        break;
      }
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
