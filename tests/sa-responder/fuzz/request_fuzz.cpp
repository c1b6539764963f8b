// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for the request side: arbitrary bytes decoded as an SA request and answered
// by the engine on a small subnet, with and without a policy, and taken by rdma-qos-sad's trap
// subscription as an answer to its Sets or a Report, from the SM and from another LID. No input
// may crash, read out of bounds or hit undefined behaviour, and every answer must encode.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_subnet.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/trap_subscription.h"

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
  // The subscription has Sets with TIDs 1 to 4 under way at the SM (LID 1); this SA is LID 9.
  sad::TrapSubscription traps;
  const auto now = sad::TrapSubscription::Clock::now();
  traps.due(now, 1, 9);
  for (uint16_t from : {1, 2}) {
    auto out = traps.received(*request, from, now);
    if (out.reply && sa::encode_sa_mad(*out.reply).size() < sa::kMadSize) __builtin_trap();
  }
  traps.rediscovery_due(now + std::chrono::hours(1));
  if (auto notice = sad::decode_notice(request->data)) (void)sad::describe(*notice);
  return 0;
}
