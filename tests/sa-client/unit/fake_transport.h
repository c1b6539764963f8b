// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A scripted Transport for unit tests: a handler decides what (if anything) answers each
// request; answers can be held back until enough requests are outstanding.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/transport.h"

namespace rdmaqos::sa::testing {

struct SentMad {
  SaMad mad;
  uint16_t dlid = 0;
  std::chrono::milliseconds response_timeout{0};
};

class FakeTransport final : public Transport {
 public:
  // Returns the MADs that answer `request` (empty: no answer).
  using Handler = std::function<std::vector<ReceivedMad>(const SaMad& request)>;

  explicit FakeTransport(Handler handler) : handler_(std::move(handler)) {
    port_.ca = "fake0";
    port_.port = 1;
    port_.lid = 2;
    port_.sm_lid = 1;
  }

  Result<Ok> send(std::span<const uint8_t> bytes, uint16_t dlid, uint8_t,
                  std::chrono::milliseconds response_timeout) override {
    auto mad = decode_sa_mad(bytes);
    if (!mad) return mad.error();
    sent.push_back({*mad, dlid, response_timeout});
    for (auto& r : handler_(*mad)) held_.push_back(std::move(r));
    ++outstanding_;
    max_outstanding = std::max(max_outstanding, outstanding_);
    if (outstanding_ >= release_at) release();
    return Ok{};
  }

  Result<std::optional<ReceivedMad>> receive(std::chrono::milliseconds timeout) override {
    if (ready_.empty()) {
      // Nothing more will arrive before the client sends again: let its deadline pass.
      std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(1)));
      return std::optional<ReceivedMad>{};
    }
    ReceivedMad r = std::move(ready_.front());
    ready_.pop_front();
    return std::optional<ReceivedMad>(std::move(r));
  }

  const PortAttributes& port() const override { return port_; }
  Result<PortAttributes> refresh_port() override {
    port_.sm_lid = next_sm_lid ? next_sm_lid : port_.sm_lid;
    return port_;
  }

  std::vector<SentMad> sent;
  size_t max_outstanding = 0;
  size_t release_at = 1;  // answers are delivered once this many requests are outstanding
  uint16_t next_sm_lid = 0;

 private:
  void release() {
    for (auto& r : held_) ready_.push_back(std::move(r));
    held_.clear();
    outstanding_ = 0;
  }

  Handler handler_;
  PortAttributes port_;
  std::vector<ReceivedMad> held_;
  std::deque<ReceivedMad> ready_;
  size_t outstanding_ = 0;
};

// The response an SA would send to `request`: same TID and attribute, R bit set.
inline SaMad response_to(const SaMad& request, uint8_t method, uint16_t status = 0) {
  SaMad m;
  m.mad = request.mad;
  m.mad.method = method;
  m.mad.status = status;
  return m;
}

// As the umad layer hands over an answer: exactly as long as its data (kernel RMPP
// reassembly trims to the payload; umad2sim passes the sender's length).
inline ReceivedMad received(const SaMad& m) {
  auto bytes = encode_sa_mad(m);
  bytes.resize(kSaDataOffset + m.data.size());
  return ReceivedMad{0, bytes};
}

}  // namespace rdmaqos::sa::testing
