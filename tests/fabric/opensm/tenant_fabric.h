// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The pkey-group fabric the check and the plugin tests share: a partitions file putting node001
// (full member) and node003 (limited member) in partition 0x20 (Tenant), and a policy whose
// qos-setup gives that partition's pkey group (or the group of its name) its own tables.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <string>

namespace rdmaqos::fabric {

inline std::string tenant_partitions(uint64_t full_member, uint64_t limited_member) {
  return fmt::format(
      "Default=0x7fff, ipoib : ALL=full;\nTenant=0x20 : {:#018x}=full, {:#018x}=limited;\n",
      full_member, limited_member);
}

inline constexpr const char* kTenantSl2Vl = "1,0,3,2,4,0,0,0,0,0,0,0,0,0,0,15";

inline constexpr const char* kTenantPolicy = R"(port-groups
  port-group
    name: Tenant
    pkey: 0x8020
  end-port-group
end-port-groups
qos-setup
  vlarb-tables
    vlarb-scope
      group: Tenant
      vlarb-high: 0:255,1:127
      vlarb-low: 2:63,3:31
    end-vlarb-scope
  end-vlarb-tables
  sl2vl-tables
    sl2vl-scope
      group: Tenant
      sl2vl-table: 1,0,3,2,4,0,0,0,0,0,0,0,0,0,0,15
    end-sl2vl-scope
  end-sl2vl-tables
end-qos-setup
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
end-qos-levels
)";

// kTenantPolicy with the group selected by the partition's name instead of its pkey.
inline std::string tenant_partition_policy() {
  std::string s = kTenantPolicy;
  const std::string pkey = "pkey: 0x8020";
  s.replace(s.find(pkey), pkey.size(), "partition: Tenant");
  return s;
}

// The differences a check without the policy finds once the group holds the policy's tables
// (and a check with it, before): node001's and node003's, "node port table".
inline const std::set<std::string>& tenant_differences() {
  static const std::set<std::string> d = {
      "node001 HCA-1 1 sl2vl 0->1", "node001 HCA-1 1 vlarb-high", "node001 HCA-1 1 vlarb-low",
      "node003 HCA-1 1 sl2vl 0->1", "node003 HCA-1 1 vlarb-high", "node003 HCA-1 1 vlarb-low"};
  return d;
}

}  // namespace rdmaqos::fabric
