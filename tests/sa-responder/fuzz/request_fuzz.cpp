// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for the request side: arbitrary bytes decoded as an SA request and answered
// by the engine on a small subnet, with and without a policy. No input may crash, read out of
// bounds or hit undefined behaviour, and every answer must encode.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_subnet.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"

using namespace rdmaqos;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sad::testing::FuzzSubnet subnet;
  auto request = sa::decode_sa_mad(std::span<const uint8_t>(data, size));
  if (!request) return 0;
  for (const policy::CompiledPolicy* p :
       {subnet.compiled.get(), (const policy::CompiledPolicy*)nullptr}) {
    sad::AnswerContext ctx;
    ctx.fabric = &subnet.model;
    ctx.policy = p;
    ctx.partitions = &subnet.fabric.partitions;
    ctx.requester = sad::testing::kA;
    if (auto answer = sad::answer(ctx, *request)) {
      if (sa::encode_sa_mad(*answer).size() < sa::kMadSize) __builtin_trap();
    }
  }
  return 0;
}
