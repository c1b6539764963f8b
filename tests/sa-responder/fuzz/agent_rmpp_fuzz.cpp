// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for MADs in and out of the SA agent, RMPP included: the input is one request
// as the kernel MAD layer hands it over (after RMPP reassembly it can be any length, so a long
// one first comes back ENOSPC and the agent reads it again with a larger buffer). SaAgent
// serves it over a scripted port, with the answer engine on a small subnet, once as an RMPP
// agent and once as a single-MAD one (umad2sim's case). No input may crash or hit undefined
// behaviour, and each MAD sent must be one a client decodes: the request's TID, the answer
// method, and for a table answer the RMPP header encode_answer promises (agent.h): ACTIVE with
// the whole answer in one buffer for the kernel to segment, or FIRST|LAST with a PayloadLength
// that counts exactly what was sent, in one MAD.
#include <infiniband/umad.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_subnet.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"

using namespace rdmaqos;

namespace {

// Node a's LID in the small subnet (test_fabric.h): a requester the fabric model knows.
constexpr uint16_t kRequesterLid = 2;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// The kernel's side of umad_recv/umad_send for one request: ENOSPC (with the length needed)
// while the buffer is too small, then the MAD from the requester's LID; every send is kept.
class OneRequestPort final : public sad::MadPort {
 public:
  explicit OneRequestPort(std::span<const uint8_t> mad) : mad_(mad) {}
  std::vector<std::vector<uint8_t>> sent;

  int recv(std::span<uint8_t> buffer, int& length, std::chrono::milliseconds) override {
    if (delivered_) return -ETIMEDOUT;
    if (buffer.size() < umad_size() + mad_.size()) {
      length = static_cast<int>(mad_.size());
      return -ENOSPC;
    }
    std::memset(buffer.data(), 0, buffer.size());
    if (!mad_.empty()) std::memcpy(umad_get_mad(buffer.data()), mad_.data(), mad_.size());
    umad_set_addr(buffer.data(), kRequesterLid, 1, 0, static_cast<int>(sa::kSaQkey));
    length = static_cast<int>(mad_.size());
    delivered_ = true;
    return 0;
  }

  int send(std::span<uint8_t> buffer, int length, int /*response_timeout_ms*/) override {
    check(length > 0 && umad_size() + static_cast<size_t>(length) <= buffer.size());
    const auto* p = static_cast<const uint8_t*>(umad_get_mad(buffer.data()));
    sent.emplace_back(p, p + length);
    return 0;
  }

  bool alive() override { return true; }

 private:
  std::span<const uint8_t> mad_;
  bool delivered_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sad::testing::FuzzSubnet subnet;
  if (size > 64 * 1024) return 0;  // the kernel reassembles no more for one request
  std::span<const uint8_t> request(data, size);
  auto decoded = sa::decode_sa_mad(request);
  for (bool rmpp : {true, false}) {
    auto* port = new OneRequestPort(request);
    sad::AgentOptions options;
    options.rmpp = rmpp;
    sad::SaAgent agent(std::unique_ptr<sad::MadPort>(port), options);
    auto responder = [](const sad::Request& r) -> std::optional<sa::SaMad> {
      sad::AnswerContext ctx;
      ctx.fabric = &subnet.model;
      ctx.policy = subnet.compiled.get();
      ctx.partitions = &subnet.fabric.partitions;
      ctx.set_requester_lid(r.slid);
      return sad::answer(ctx, r.mad);
    };
    auto served = agent.serve_one(responder, std::chrono::milliseconds(0));
    check(static_cast<bool>(served) && served->kind == sad::Served::Kind::kHandled);
    check(port->sent.size() <= 1);
    if (!decoded) check(port->sent.empty() && agent.undecodable() == 1);
    for (const std::vector<uint8_t>& bytes : port->sent) {
      auto answer = sa::decode_sa_mad(bytes);
      check(static_cast<bool>(answer));
      check(answer->mad.tid == decoded->mad.tid);
      check((answer->mad.method & 0x80) != 0);
      const uint8_t method = answer->mad.method;
      const bool table = method == sa::method::kGetTableResp || method == sa::method::kGetMultiResp;
      if (!table || answer->mad.status != 0) {
        check(bytes.size() >= sa::kMadSize);
        continue;
      }
      check(answer->rmpp.version == sa::rmpp::kVersion && answer->rmpp.type == sa::rmpp::kTypeData);
      if (rmpp) {
        check(answer->rmpp.flags == sa::rmpp::kFlagActive && answer->rmpp.segment == 0 &&
              answer->rmpp.payload_length == 0);
      } else {
        check(bytes.size() <= sa::kMadSize);
        check(answer->rmpp.flags ==
              (sa::rmpp::kFlagActive | sa::rmpp::kFlagFirst | sa::rmpp::kFlagLast));
        check(answer->rmpp.segment == 1);
        check(answer->rmpp.payload_length ==
              sa::kSaHeaderSize + (bytes.size() - sa::kSaDataOffset));
      }
      // What a client counts: whole records of AttributeOffset * 8 bytes.
      if (answer->sa.attr_offset != 0)
        sa::response_records(*answer, size_t{answer->sa.attr_offset} * 8).ignore_error();
    }
  }
  return 0;
}
