// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: opensm.conf text (read by rdma-qos-sad --opensm-conf, `rdma-qos policy
// check --opensm-conf` and the plugin's fabric checks) through the QoS and SM option reader, the
// VL arbitration arithmetic of every port class and the SL-to-VL15 check against a policy.
// Nothing may crash or hit undefined behaviour; what was read must be in range.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/policy/policy.h"

namespace {
constexpr const char* kPolicy =
    "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
    "qos-level\nname: A\nsl: 7\nend-qos-level\n"
    "qos-level\nname: B\nsl: 14\nend-qos-level\nend-qos-levels\n";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace pol = rdmaqos::policy;
  static const pol::ParseResult policy = pol::parse_policy(kPolicy);
  std::string_view text(reinterpret_cast<const char*>(data), size);
  pol::OpenSmConfResult r = pol::parse_opensm_conf(text);
  if (r.sm.subnet_timeout && *r.sm.subnet_timeout > 31) __builtin_trap();
  if (r.sm.sm_sl && *r.sm.sm_sl > 15) __builtin_trap();
  for (pol::PortClass c : pol::kPortClasses) {
    const pol::QosPortConfig& port = r.config.port(c);
    for (uint8_t vl : port.sl2vl)
      if (vl > 15) __builtin_trap();
    for (int mtu : {256, 4096}) {
      pol::VlArbAnalysis a = pol::analyze_vlarb(port, mtu);
      for (const pol::VlShare& s : a.vls)
        if (std::isnan(s.share) || s.share < 0 || s.share > 1.000001) __builtin_trap();
      if (std::isnan(a.high_fraction)) __builtin_trap();
    }
  }
  (void)pol::check_level_sls(policy.policy, r.config);
  return 0;
}
