// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMP Sets for the intended tables. The modifiers are the ones the reads used: a switch's
// SL2VL table (input << 8 | output), VLArb block << 16 | port (0 on end ports and port 0).
#include "rdma-qos/fabric/apply.h"

#include <infiniband/mad.h>

#include <fmt/format.h>

namespace rdmaqos::fabric {

std::vector<SmpSet> plan_sets(const FabricTables& current, const Planner& planner) {
  std::vector<SmpSet> sets;
  for (const auto& node : current.nodes) {
    const bool is_switch = node.type == policy::NodeType::kSwitch;
    auto peer_of = [&node](uint8_t in) -> std::optional<PortRef> {
      const PortTables* p = node.find(in);
      return p ? p->peer : std::nullopt;
    };
    for (const auto& port : node.ports) {
      if (!programmed(node, port)) continue;
      const uint16_t lid = port.info.lid;
      const std::string name =
          fmt::format("{} ({:#x}) port {}", node.description, node.guid, port.port);
      const IntendedPort want = planner.plan(node, port, peer_of);
      for (const auto& [in, table] : want.sl2vl) {
        auto got = port.sl2vl.find(in);
        if (got != port.sl2vl.end() && got->second == table) continue;
        const uint32_t mod =
            is_switch && port.port != 0 ? static_cast<uint32_t>(in << 8 | port.port) : 0;
        sets.push_back({lid, kAttrSl2Vl, mod, encode_sl2vl(table),
                        fmt::format("{} sl2vl {}->{}", name, in, port.port)});
      }
      const uint32_t port_mod = is_switch ? port.port : 0;
      auto vlarb = [&](const std::optional<VlArbTable>& w, const std::optional<VlArbTable>& g,
                       uint32_t first_block, const char* what) {
        if (!w || (g && same_vlarb(*g, *w))) return;
        sets.push_back({lid, kAttrVlArb, first_block << 16 | port_mod, encode_vlarb_block(*w, 0),
                        fmt::format("{} {}", name, what)});
        if (w->size() > kVlArbBlockEntries) {
          sets.push_back({lid, kAttrVlArb, (first_block + 1) << 16 | port_mod,
                          encode_vlarb_block(*w, kVlArbBlockEntries),
                          fmt::format("{} {} (second block)", name, what)});
        }
      };
      vlarb(want.vlarb_low, port.vlarb_low, 1, "vlarb-low");
      vlarb(want.vlarb_high, port.vlarb_high, 3, "vlarb-high");
      if (want.vlarb_high && want.vl_high_limit != port.info.vl_high_limit) {
        sets.push_back({lid, kAttrPortInfo, is_switch ? port.port : 0u,
                        port_info_with_high_limit(port.raw_port_info, want.vl_high_limit),
                        fmt::format("{} vl-high-limit {}", name, want.vl_high_limit)});
      }
    }
  }
  return sets;
}

ApplyResult send_sets(const std::vector<SmpSet>& sets, const ReadOptions& options) {
  ApplyResult r;
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) {
    for (const auto& s : sets) r.failed.push_back(s.what + ": cannot open the port for SMPs");
    return r;
  }
  const unsigned timeout =
      options.timeout_ms > 0 ? static_cast<unsigned>(options.timeout_ms) : 1000;
  const size_t step = std::max<size_t>(sets.size() / 10, 1);
  for (size_t i = 0; i < sets.size(); ++i) {
    const SmpSet& s = sets[i];
    ib_portid_t id{};
    ib_portid_set(&id, s.lid, 0, 0);
    uint8_t buf[IB_SMP_DATA_SIZE];
    bool done = false;
    for (int a = 0; a < std::max(options.attempts, 1) && !done; ++a) {
      std::copy(s.data.begin(), s.data.end(), buf);
      done = smp_set_via(buf, &id, s.attr, s.mod, timeout, mad) != nullptr;
    }
    if (done) {
      ++r.written;
    } else {
      r.failed.push_back(s.what);
    }
    if (options.progress && (i + 1) % step == 0)
      options.progress(fmt::format("written {}/{}", i + 1, sets.size()));
  }
  return r;
}

}  // namespace rdmaqos::fabric
