// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// torus-2QoS.conf for the tori topology_graph.cpp generates (see torus_2qos_conf.h).
#include "rdma-qos/testbed/torus_2qos_conf.h"

#include <fmt/format.h>

namespace rdmaqos::testbed {

std::string torus_2qos_conf(const Topology& topology, TorusRadix radix) {
  // torus_spec / torus3d_spec number switch (i, j, k) as (k * y + j) * x + i; make_switch_graph
  // names switch s "sw" followed by s + 1.
  auto guid = [&](int i, int j, int k) {
    const int s = (k * radix.y + j) * radix.x + i;
    return topology.node(fmt::format("sw{:02d}", s + 1)).node_guid;
  };
  std::string out =
      fmt::format("{} {} {} {}\n", radix.mesh ? "mesh" : "torus", radix.x, radix.y, radix.z);
  const uint64_t origin = guid(0, 0, 0);
  const struct {
    char axis;
    int radix;
    uint64_t plus, minus;
  } dims[] = {
      {'x', radix.x, guid(1 % radix.x, 0, 0), guid(radix.x - 1, 0, 0)},
      {'y', radix.y, guid(0, 1 % radix.y, 0), guid(0, radix.y - 1, 0)},
      {'z', radix.z, guid(0, 0, 1 % radix.z), guid(0, 0, radix.z - 1)},
  };
  for (const auto& d : dims) {
    if (d.radix < 2) continue;
    out += fmt::format("{}p_link 0x{:x} 0x{:x}\n", d.axis, origin, d.plus);
    if (!radix.mesh) out += fmt::format("{}m_link 0x{:x} 0x{:x}\n", d.axis, origin, d.minus);
  }
  return out;
}

}  // namespace rdmaqos::testbed
