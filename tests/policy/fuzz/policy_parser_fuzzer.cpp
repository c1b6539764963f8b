// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: any bytes through the policy, partitions and net-file readers, then the
// compiler and matcher. Nothing may crash, hang or leak, whatever the input.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/opensm_compat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace pol = rdmaqos::policy;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  pol::FabricResult fabric = pol::parse_net_file(text);
  pol::PartitionsResult parts = pol::parse_partitions(text, fabric.fabric);
  fabric.fabric.partitions = std::move(parts.partitions);
  auto check = [](const pol::CompileResult& r) {
    if (!r.policy) return;
    pol::PathQuery q;
    q.component_mask =
        pol::kCompServiceIdMsb | pol::kCompServiceIdLsb | pol::kCompPkey | pol::kCompQosClass;
    for (uint64_t v : {0ULL, 1ULL, 0x10000ULL, 0x1060CBCULL, 0x7FFFULL}) {
      q.service_id = v;
      q.qos_class = static_cast<uint16_t>(v & 0xFFF);
      q.pkey = static_cast<uint16_t>(v);
      q.source_guid = v;
      q.destination_guid = v + 1;
      // With and without a traffic class (tclass rules, an rdma-qos extension).
      q.tclass = std::nullopt;
      if (r.policy->match(q).rule != r.policy->explain(q).result.rule) __builtin_trap();
      q.tclass = static_cast<uint8_t>(v);
      if (r.policy->match(q).rule != r.policy->explain(q).result.rule) __builtin_trap();
    }
    // What the OpenSM-compatibility check reports must not crash either.
    (void)pol::opensm_compatibility(r.policy->policy());
  };
  // The policy is parsed once and compiled without a fabric and against the net file's: the
  // parse depends on the text alone, and the second one was a fifth of the time per input.
  pol::ParseResult parsed = pol::parse_policy(text);
  check(pol::load_policy(parsed, nullptr));
  check(pol::load_policy(std::move(parsed), &fabric.fabric));
  return 0;
}
