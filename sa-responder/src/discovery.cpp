// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Discovery over SMPs. libibnetdisc walks the topology and keeps each node's NodeInfo,
// SwitchInfo and each port's PortInfo; the tables it does not read (PKey, SL2VL, LFT) are
// queried here, LID-routed (by directed route where no route leads), once the SM has assigned
// LIDs, many in flight at once. Both that and the incremental re-discovery
// (discovery_incremental.cpp) fill a Scan, which assemble() turns into the model.
#include "rdma-qos/sa-responder/discovery.h"

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "discovery_incremental.h"
#include "discovery_m_key.h"
#include "discovery_scan.h"
#include "smp_window.h"

namespace rdmaqos::sad {
namespace {

struct FabricDeleter {
  void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};

SmpBytes bytes(const uint8_t* p) {
  SmpBytes b{};
  std::memcpy(b.data(), p, b.size());
  return b;
}

// libibnetdisc's topology as a scan: NodeInfo, NodeDescription, SwitchInfo, each port's PortInfo
// and links.
Scan scan_of(const ibnd_fabric_t& fabric) {
  Scan scan;
  for (ibnd_node_t* n = fabric.nodes; n != nullptr; n = n->next) {
    ScanNode node;
    node.set_node_info(bytes(n->info));
    node.switch_info = bytes(n->switchinfo);
    node.description = n->nodedesc;
    for (int h = 1; h <= n->path_portid.drpath.cnt && h < IB_SUBNET_PATH_HOPS_MAX; ++h)
      node.path.push_back(n->path_portid.drpath.p[h]);
    for (int p = 0; p <= n->numports && static_cast<size_t>(p) < node.ports.size(); ++p) {
      const ibnd_port_t* port = n->ports[p];
      if (port == nullptr) continue;
      ScanPort& sp = node.ports[static_cast<size_t>(p)];
      sp.set_info(bytes(port->info));
      sp.guid = port->guid;
      if (port->remoteport != nullptr) {
        sp.linked = true;
        sp.remote_guid = port->remoteport->node->guid;
        sp.remote_port = static_cast<uint8_t>(port->remoteport->portnum);
      }
    }
    if (node.is_switch() && !node.ports.empty() && !node.ports[0].present) {
      scan.missing.push_back(fmt::format("no PortInfo of switch {:#x} port 0", n->guid));
    }
    scan.nodes.push_back(std::move(node));
  }
  if (fabric.from_node != nullptr) {
    scan.self_guid = fabric.from_node->guid;
    scan.self_port = static_cast<uint8_t>(fabric.from_portnum);
  }
  return scan;
}

// The window the options ask for, within the bounds the command line checks.
size_t smp_window(const DiscoveryOptions& options) {
  return std::clamp<size_t>(options.smp_window, 1, kMaxSmpWindow);
}

SmpGet lid_routed(uint16_t lid, uint16_t attr, uint32_t mod) {
  SmpGet g;
  g.lid = lid;
  g.attr = attr;
  g.mod = mod;
  return g;
}

}  // namespace

std::optional<rdmaqos::Error> replacement_refused(const Discovery& found) {
  if (found.missing.empty()) return std::nullopt;
  return rdmaqos::make_error(
      rdmaqos::ErrorCode::kTimeout,
      fmt::format("incomplete: {} table{} did not answer (first: {})", found.missing.size(),
                  found.missing.size() == 1 ? "" : "s", found.missing.front()));
}

rdmaqos::Result<Discovery> discover_fabric(const DiscoveryOptions& options) {
  char* ca = options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str());
  ibnd_config_t config{};
  config.timeout_ms = static_cast<unsigned>(options.timeout_ms);
  config.retries = static_cast<unsigned>(options.retries);
  // The topology walk keeps the same bound on SMPs in flight as the table reads, and carries
  // the same M_Key.
  config.max_smps = static_cast<unsigned>(smp_window(options));
  config.mkey = options.m_key;
  std::unique_ptr<ibnd_fabric_t, FabricDeleter> fabric(
      ibnd_discover_fabric(ca, options.port, nullptr, &config));
  if (!fabric) {
    return rdmaqos::make_error(
        rdmaqos::ErrorCode::kTransport,
        options.m_key == 0
            ? "libibnetdisc could not discover the fabric (its own port did not answer? a port "
              "M_Key-protected at level 2 or 3 answers nothing without --m-key)"
            : "libibnetdisc could not discover the fabric (its own port did not answer? is "
              "--m-key its M_Key?)");
  }
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "cannot open the port for SMPs");
  }
  if (options.retries > 0) mad_rpc_set_retries(mad, options.retries);
  UmadSmpTransport smp(mad, smp_window(options), options.timeout_ms > 0 ? options.timeout_ms : 1000,
                       std::max(options.attempts, 1), options.m_key);
  auto progress = [&options](const std::string& what) {
    if (options.progress) options.progress(what);
  };

  Scan scan = scan_of(*fabric);
  fabric.reset();
  MKeySigns m_key = m_key_signs(scan);
  size_t switches = 0;
  for (const ScanNode& n : scan.nodes) switches += n.is_switch() ? 1 : 0;
  progress(fmt::format("topology: {} nodes ({} switches); reading PKey, SL2VL and LFT tables",
                       scan.nodes.size(), switches));

  // Every table at once, LID-routed: the switches' forwarding tables, then the PKey and SL2VL
  // tables (the switches' SL2VL tables, one per input/output port pair, are most of them).
  struct Read {
    TableRef table;
    unsigned block = 0;
    bool lft = false;
  };
  std::vector<Read> reads;
  std::vector<SmpGet> gets;
  for (size_t n = 0; n < scan.nodes.size(); ++n) {
    ScanNode& node = scan.nodes[n];
    if (!node.is_switch()) continue;
    const uint16_t top = decode_lft_top(node.switch_info);
    node.lft.assign(static_cast<size_t>(top) + 1, 0xFF);
    const uint16_t lid = node.ports.empty() ? 0 : node.ports[0].pi.lid;
    for (unsigned block = 0; block < lft_blocks(top); ++block) {
      reads.push_back({{TableRef::Kind::kPKeys, n, 0, 0}, block, true});
      gets.push_back(lid_routed(lid, IB_ATTR_LINEARFORWTBL, block));
    }
  }
  const std::vector<TableRef> plan = plan_tables(scan);
  for (const TableRef& t : plan) {
    const ScanNode& node = scan.nodes[t.node];
    const uint16_t lid = node.ports[node.is_switch() ? 0 : t.port].pi.lid;
    if (t.kind == TableRef::Kind::kPKeys) {
      for (unsigned block = 0; block < pkey_blocks(node.ni.partition_cap); ++block) {
        reads.push_back({t, block, false});
        gets.push_back(lid_routed(lid, IB_ATTR_PKEY_TBL, block));
      }
      continue;
    }
    reads.push_back({t, 0, false});
    gets.push_back(lid_routed(lid, IB_ATTR_SLVL_TABLE,
                              node.is_switch() ? static_cast<uint32_t>(t.in << 8 | t.port) : 0));
  }
  progress(fmt::format("tables: {} SMPs ({} PKey and SL2VL tables)", gets.size(), plan.size()));
  auto answers = smp.get(gets);
  // A node the forwarding tables do not lead to from this port (a route missing, or a switch
  // not yet routed) answers no LID-routed SMP: its tables are read by directed route, as the
  // SM reads them.
  std::vector<size_t> unanswered;
  std::vector<SmpGet> directed;
  for (size_t i = 0; i < gets.size(); ++i) {
    if (answers[i]) continue;
    unanswered.push_back(i);
    SmpGet g = gets[i];
    g.directed = true;
    g.path = scan.nodes[reads[i].table.node].path;
    directed.push_back(std::move(g));
  }
  if (!directed.empty()) {
    progress(fmt::format("tables: {} SMPs not answered LID-routed: sent again by directed route",
                         directed.size()));
    const auto again = smp.get(directed);
    for (size_t k = 0; k < unanswered.size(); ++k) answers[unanswered[k]] = again[k];
  }
  for (size_t i = 0; i < reads.size(); ++i) {
    const Read& r = reads[i];
    ScanNode& node = scan.nodes[r.table.node];
    const std::optional<SmpData>& a = answers[i];
    if (r.lft) {
      if (!a) {
        return rdmaqos::make_error(
            rdmaqos::ErrorCode::kTransport,
            fmt::format("no LFT block {} from switch {:#x}", r.block, node.ni.node_guid));
      }
      put_lft_block(*a, r.block, node.lft);
      continue;
    }
    ScanPort& port = node.ports[r.table.port];
    if (r.table.kind == TableRef::Kind::kPKeys) {
      // Blocks in order; one that does not answer leaves the table unread (missing).
      if (r.block == 0) {
        port.pkeys.clear();
        port.pkeys_read = true;
      }
      if (!a) port.pkeys_read = false;
      if (a && port.pkeys_read) append_pkeys(*a, port.pkeys);
      if (!port.pkeys_read) port.pkeys.clear();
      continue;
    }
    if (!a) continue;  // missing: assemble() names it
    if (port.sl2vl.size() <= r.table.in) port.sl2vl.resize(static_cast<size_t>(r.table.in) + 1);
    port.sl2vl[r.table.in] = decode_sl2vl(*a);
  }
  auto out = assemble(scan);
  if (!out) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                               "discovery did not find its own port");
  }
  out->unanswered = std::move(m_key.unanswered);
  if (m_key.level1) out->warnings.push_back(std::move(*m_key.level1));
  progress(fmt::format("done: {} endpoints, {} table(s) missing, {} SMP(s) sent again",
                       out->model.endpoints().size(), out->missing.size(), smp.resent()));
  return std::move(*out);
}

IncrementalOutcome rediscover_fabric(const DiscoveryOptions& options, const Discovery& previous) {
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) {
    IncrementalOutcome out;
    out.fallback =
        rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "cannot open the port for SMPs");
    return out;
  }
  if (options.retries > 0) mad_rpc_set_retries(mad, options.retries);
  UmadSmpTransport smp(mad, smp_window(options), options.timeout_ms > 0 ? options.timeout_ms : 1000,
                       std::max(options.attempts, 1), options.m_key);
  IncrementalOutcome out = incremental_discovery(smp, previous, {}, options.progress);
  if (out.found && options.progress) {
    options.progress(fmt::format("done: {} endpoints, {} table(s) missing, {} SMP(s) sent again",
                                 out.found->model.endpoints().size(), out.found->missing.size(),
                                 smp.resent()));
  }
  return out;
}

}  // namespace rdmaqos::sad
