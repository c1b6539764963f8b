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

constexpr size_t kMadSize = 256;
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

struct Pending {
  size_t index = 0;
  int sent = 0;
  Clock::time_point deadline;
};

}  // namespace

std::optional<std::vector<std::optional<SmpData>>> smp_get_window(ibmad_port* port,
                                                                  const std::vector<SmpGet>& gets,
                                                                  size_t window, int timeout_ms,
                                                                  int attempts, int* resent) {
  const int fd = mad_rpc_portid(port);
  const int agent = mad_rpc_class_agent(port, IB_SMI_CLASS);
  const int dr_agent = mad_rpc_class_agent(port, IB_SMI_DIRECT_CLASS);
  if (fd < 0 || agent < 0) return std::nullopt;
  for (const SmpGet& g : gets) {
    if (g.directed && (dr_agent < 0 || g.path.size() > kMaxDirectedHops)) return std::nullopt;
  }
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
    mad[0] = 1;  // base version
    mad[1] = g.directed ? IB_SMI_DIRECT_CLASS : IB_SMI_CLASS;
    mad[2] = 1;  // class version
    mad[3] = IB_MAD_METHOD_GET;
    const uint64_t tid = kTidTag | (++tid_counter & 0xFFFFFF);
    tid_of[p.index] = tid;
    put_be(mad + 8, tid, 8);
    put_be(mad + 16, g.attr, 2);
    put_be(mad + 20, g.mod, 4);
    if (g.directed) {
      // Status (D bit 0: outbound) and hop pointer 0; hop count; DrSLID and DrDLID permissive
      // (the whole route directed); the initial path from byte 1 on.
      mad[7] = static_cast<uint8_t>(g.path.size());
      put_be(mad + 32, kPermissiveLid, 2);
      put_be(mad + 34, kPermissiveLid, 2);
      for (size_t i = 0; i < g.path.size(); ++i) mad[kDrPathOffset + 1 + i] = g.path[i];
    }
    umad_set_addr(send_buf.get(), g.directed ? kPermissiveLid : g.lid, 0, 0, 0);
    if (p.sent > 0 && resent != nullptr) ++*resent;
    ++p.sent;
    p.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    return umad_send(fd, g.directed ? dr_agent : agent, send_buf.get(), static_cast<int>(kMadSize),
                     0, 0) == 0;
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
  if (auto many = smp_get_window(port_, sent, window_, timeout_ms_, attempts_, &resent_)) {
    std::vector<std::optional<SmpData>> out(gets.size());
    for (size_t k = 0; k < order.size(); ++k) out[order[k]] = (*many)[k];
    return out;
  }
  // One at a time through libibmad.
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
