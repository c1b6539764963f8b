// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The bandwidth each SL gets under saturation, per port class, computed from the tables the
// ports actually hold (not from the configuration): the most common table set of each class,
// with the number of ports that hold another.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "rdma-qos/fabric/tables.h"

namespace rdmaqos::fabric {

struct SlShare {
  uint8_t sl = 0;
  uint8_t vl = 0;    // 15: dropped
  double share = 0;  // fraction of the link when every SL is saturated
};

struct ClassShare {
  policy::PortClass port_class = policy::PortClass::kCa;
  size_t ports = 0;   // ports of the class read
  size_t others = 0;  // of them, ports whose tables differ from the ones shown
  std::vector<SlShare> sls;
  double high_fraction = 0;  // of the link, for the high-priority table
};

struct ShareView {
  std::vector<ClassShare> classes;  // classes with ports, in opensm.conf order
};

ShareView share_view(const FabricTables& fabric);
nlohmann::json to_json(const ShareView& view);
std::vector<std::string> to_lines(const ShareView& view);
// Draws the view with gnuplot (one bar group per SL, one bar per class); an error text, or
// empty on success.
std::string write_share_svg(const ShareView& view, const std::string& path);

}  // namespace rdmaqos::fabric
