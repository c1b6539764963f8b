// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for the request side: arbitrary bytes decoded as an SA request and answered
// by the engine on a small subnet, with and without a policy. No input may crash, read out of
// bounds or hit undefined behaviour, and every answer must encode.
#include <cstddef>
#include <cstdint>
#include <span>

#include "../unit/test_fabric.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"

using namespace rdmaqos;

namespace {

constexpr const char* kPolicy = R"(qos-levels
qos-level
name: DEFAULT
sl: 0
end-qos-level
qos-level
name: L
sl: 3
mtu-limit: 2
rate-limit: 5
packet-life: 8
pkey: 0x10
end-qos-level
end-qos-levels
qos-match-rules
qos-match-rule
service-id: 0x100-0x1FF
qos-level-name: L
end-qos-match-rule
end-qos-match-rules
)";

struct Subnet {
  sad::FabricModel model = sad::testing::small_model();
  policy::Fabric fabric = model.policy_fabric();
  std::shared_ptr<const policy::CompiledPolicy> compiled;
  Subnet() {
    fabric.partitions = policy::default_partitions(fabric);
    compiled = policy::load_policy(kPolicy, &fabric).policy;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Subnet subnet;
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
