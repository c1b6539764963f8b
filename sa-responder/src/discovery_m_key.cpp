// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Signs of M_Key protection in a scan, and the refusal they lead to (see discovery_m_key.h).
#include "discovery_m_key.h"

#include <fmt/format.h>

#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {
namespace {

// A directed route as smpquery -D takes it: "0" for the local node, then each output port.
std::string route(const std::vector<uint8_t>& path) {
  std::string out = "0";
  for (uint8_t p : path) out += fmt::format(",{}", p);
  return out;
}

std::string where(const ScanNode& node, size_t port) {
  const uint16_t lid = node.is_switch() ? node.ports[0].pi.lid : node.ports[port].pi.lid;
  return fmt::format("{} {:#018x} port {} (LID {})", node.is_switch() ? "switch" : "CA",
                     node.ni.node_guid, port, lid);
}

}  // namespace

MKeySigns m_key_signs(const Scan& scan) {
  MKeySigns signs;
  size_t level1 = 0;
  std::string first_level1;
  for (const ScanNode& node : scan.nodes) {
    const bool self = node.ni.node_guid == scan.self_guid;
    for (size_t p = 0; p < node.ports.size(); ++p) {
      const ScanPort& sp = node.ports[p];
      if (!sp.present) continue;
      if (sp.pi.m_key_protect_bits != 0 && sp.pi.m_key == 0) {
        if (level1++ == 0) first_level1 = where(node, p);
      }
      const bool watched = node.is_switch() ? p != 0 : self && p == scan.self_port;
      if (!watched || !sp.pi.link_up() || sp.linked) continue;
      std::vector<uint8_t> beyond = node.path;
      beyond.push_back(static_cast<uint8_t>(p));
      signs.unanswered.push_back(
          fmt::format("{}: the link is up, but the node behind it (directed route {}) answered "
                      "no SMP",
                      where(node, p), route(beyond)));
    }
  }
  if (level1 > 0) {
    signs.level1 = fmt::format(
        "{} port{} M_Key-protected at level 1 read{} M_Key 0 (first: {}): the M_Key discovery "
        "sends is not theirs. Level 1 answers Gets all the same, so the model is complete; at "
        "level 2 or 3 they would answer none (give the subnet's M_Key with --m-key)",
        level1, level1 == 1 ? "" : "s", level1 == 1 ? "s" : "", first_level1);
  }
  return signs;
}

std::optional<rdmaqos::Error> m_key_refusal(const Discovery& found, uint64_t m_key) {
  if (found.unanswered.empty()) return std::nullopt;
  const size_t n = found.unanswered.size();
  return rdmaqos::make_error(
      rdmaqos::ErrorCode::kInvalidArgument,
      fmt::format("{} live link{} with no node answering behind {} (first: {}). Ports "
                  "M_Key-protected at level 2 or 3 answer no SMP without their M_Key, and the "
                  "model would lack those nodes and every path through them: {}; a node whose "
                  "management agent hangs looks the same (`smpquery -D nodeinfo ROUTE` asks it)",
                  n, n == 1 ? "" : "s", n == 1 ? "it" : "them", found.unanswered.front(),
                  m_key == 0
                      ? "give the subnet's M_Key with --m-key (OpenSM's m_key)"
                      : "the M_Key given (--m-key, or m_key of --opensm-conf) is not theirs"));
}

}  // namespace rdmaqos::sad
