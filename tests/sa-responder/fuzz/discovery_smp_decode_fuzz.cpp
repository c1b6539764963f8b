// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's discovery decoders under libFuzzer: whatever a node answers (NodeInfo,
// PortInfo, SwitchInfo, P_KeyTable, SLtoVLMappingTable, LinearForwardingTable,
// NodeDescription) decodes without reading or writing out of bounds, into values the fields can
// hold; and a scan of two nodes built from those answers (any port count, any links, any GUIDs)
// assembles into a model that names no table plan_tables() asked for and got, and whose tables
// the incremental discovery's take-over logic can compare against.
//
// Input: up to eight 64-byte SMP payloads, zero-padded: NodeInfo A, PortInfo, SwitchInfo,
// P_KeyTable block, SLtoVLMappingTable, LFT block, NodeDescription, NodeInfo B. The scanned
// nodes have at most 64 ports unless NodeDescription's last byte is 0xFF (see below).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "discovery_decode.h"
#include "discovery_scan.h"

namespace {

using rdmaqos::sad::SmpBytes;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmaqos::sad;
  SmpBytes chunk[8]{};
  for (size_t i = 0; i < 8 && i * 64 < size; ++i) {
    std::memcpy(chunk[i].data(), data + i * 64, std::min<size_t>(64, size - i * 64));
  }

  const NodeInfoFields ni = decode_node_info(chunk[0]);
  const PortInfoFields pi = decode_port_info(chunk[1]);
  check(pi.lmc <= 7 && pi.state <= 15 && pi.phys_state <= 15 && pi.mtu_cap <= 15 &&
        pi.speed_active <= 15);
  const uint16_t top = decode_lft_top(chunk[2]);
  check(lft_blocks(top) >= 1 && lft_blocks(top) <= 1024);
  check(pkey_blocks(ni.partition_cap) >= 1 && pkey_blocks(ni.partition_cap) <= 2048);

  std::vector<uint16_t> pkeys;
  append_pkeys(chunk[3], pkeys);
  size_t nonzero = 0;
  for (size_t i = 0; i < 32; ++i)
    nonzero += ((chunk[3][2 * i] << 8 | chunk[3][2 * i + 1]) & 0x7FFF) != 0;
  check(pkeys.size() == nonzero);
  for (uint16_t p : pkeys) check((p & 0x7FFF) != 0);

  const Sl2Vl sl2vl = decode_sl2vl(chunk[4]);
  for (size_t i = 0; i < 8; ++i) {
    check(sl2vl[2 * i] <= 15 && sl2vl[2 * i + 1] <= 15);
    check(static_cast<uint8_t>(sl2vl[2 * i] << 4 | sl2vl[2 * i + 1]) == chunk[4][i]);
  }

  std::vector<uint8_t> lft(static_cast<size_t>(top) + 1, 0xFF);
  const unsigned block = chunk[0][0] % (lft_blocks(top) + 2);  // past the end too
  put_lft_block(chunk[5], block, lft);
  check(lft.size() == static_cast<size_t>(top) + 1);
  for (size_t i = 0; i < 64 && block * 64 + i < lft.size(); ++i)
    check(lft[block * 64 + i] == chunk[5][i]);

  const std::string desc = decode_node_description(chunk[6]);
  check(desc.size() <= 64 && desc.find('\0') == std::string::npos);
  check(std::memcmp(desc.data(), chunk[6].data(), desc.size()) == 0);

  PortModel pm;
  const bool linked = (chunk[0][1] & 1) != 0;
  auto warning = fill_port_info(pm, pi, pi.capability_mask, linked, "fuzz");
  const PortRate rate = port_rate(pi.width_active, pi.speed_active, pi.speed_ext_active,
                                  (pi.capability_mask & kCapHasExtendedSpeeds) != 0);
  check(warning.has_value() == (linked && !rate.known));
  check(pm.rate == rate.rate);

  // Two nodes from those answers, linked at ports the bytes choose. The scan's work grows with
  // the square of a switch's port count (an SL-to-VL table per input and output port), and real
  // switches have at most 64 ports: a NumPorts above 64, up to the field's 255, is kept only when
  // the input asks for it (the description chunk's last byte 0xFF), so that most executions are
  // cheap enough for ten million of them while the large counts stay reachable.
  const bool any_port_count = chunk[6][63] == 0xFF;
  Scan scan;
  for (SmpBytes info : {chunk[0], chunk[7]}) {
    constexpr size_t kNumPorts = 3;  // NodeInfo's NumPorts byte
    if (!any_port_count && info[kNumPorts] > 64) info[kNumPorts] %= 65;
    ScanNode n;
    n.set_node_info(info);
    check(n.ports.size() == static_cast<size_t>(n.ni.ports) + 1);
    n.switch_info = chunk[2];
    n.description = desc;
    if (n.is_switch()) n.lft = lft;
    for (size_t p = 0; p < n.ports.size(); ++p) {
      if ((chunk[1][p % 64] & 3) == 0 && p != 0) continue;  // some ports unread
      n.ports[p].set_info(chunk[1]);
      n.ports[p].guid = n.ni.port_guid + p;
    }
    scan.nodes.push_back(std::move(n));
  }
  ScanNode& a = scan.nodes[0];
  ScanNode& b = scan.nodes[1];
  const size_t pa = chunk[3][0] % a.ports.size();
  const size_t pb = chunk[3][1] % b.ports.size();
  if (a.ports[pa].present && b.ports[pb].present) {
    a.ports[pa].linked = b.ports[pb].linked = true;
    a.ports[pa].remote_guid = b.ni.node_guid;
    a.ports[pa].remote_port = static_cast<uint8_t>(pb);
    b.ports[pb].remote_guid = a.ni.node_guid;
    b.ports[pb].remote_port = static_cast<uint8_t>(pa);
  }
  scan.self_guid = (chunk[3][2] & 1) ? b.ni.node_guid : a.ni.node_guid;
  scan.self_port = chunk[3][3];

  const std::vector<TableRef> plan = plan_tables(scan);
  Scan bare = scan;
  for (const TableRef& t : plan) {
    ScanPort& port = scan.nodes[t.node].ports[t.port];
    check(port.present);
    if (t.kind == TableRef::Kind::kPKeys) {
      port.pkeys = pkeys;
      port.pkeys_read = true;
    } else {
      if (port.sl2vl.size() <= t.in) port.sl2vl.resize(t.in + 1u);
      port.sl2vl[t.in] = sl2vl;
    }
  }
  auto found = assemble(scan);
  if (!found) return 0;
  check(found->missing.empty());
  check(found->model.nodes.size() == 2);
  const std::vector<TableRef> left = take_over_tables(bare, plan, found->model);
  check(left.size() <= plan.size());
  return 0;
}
