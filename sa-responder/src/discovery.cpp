// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Discovery over SMPs. libibnetdisc walks the topology and keeps each node's NodeInfo,
// SwitchInfo and each port's PortInfo; the tables it does not read (PKey, SL2VL, LFT) are
// queried here, LID-routed, once the SM has assigned LIDs: the switches' SL2VL tables (most of
// the SMPs) several at once, the rest one at a time.
#include "rdma-qos/sa-responder/discovery.h"

#include "smp_window.h"

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include <fmt/format.h>

#include <map>
#include <memory>

#include "rdma-qos/sa-client/umad_port.h"

namespace rdmaqos::sad {
namespace {

constexpr int kPortStateActive = 4;

struct FabricDeleter {
  void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};

class Smp {
 public:
  Smp(ibmad_port* port, int timeout_ms, int attempts)
      : port_(port), timeout_(timeout_ms), attempts_(std::max(attempts, 1)) {}
  // Attribute `attr` with modifier `mod` from the port at `lid`; false when no attempt is
  // answered.
  bool query(uint16_t lid, unsigned attr, unsigned mod, uint8_t (&buf)[IB_SMP_DATA_SIZE]) {
    ib_portid_t id{};
    ib_portid_set(&id, lid, 0, 0);
    for (int a = 0; a < attempts_; ++a) {
      if (smp_query_via(buf, &id, attr, mod, static_cast<unsigned>(timeout_), port_) != nullptr) {
        return true;
      }
      ++retried_;
    }
    return false;
  }
  int retried() const { return retried_; }

 private:
  ibmad_port* port_;
  int timeout_;
  int attempts_;
  int retried_ = 0;
};

// SMPs in flight at once for the switches' SL2VL tables: modest, as OpenSM's max_wire_smps (4)
// is. ibsim answers one SMP at a time, so on the simulator any window takes as long as one.
constexpr size_t kSmpWindow = 8;

// Where a switch's SL2VL table goes: node index, output port, input port.
struct SwitchTable {
  int node = 0;
  int out = 0;
  int in = 0;
};

Sl2Vl decode_sl2vl(const uint8_t* buf) {
  Sl2Vl t{};
  for (size_t sl = 0; sl < 16; ++sl) {
    uint8_t byte = buf[sl / 2];
    t[sl] = static_cast<uint8_t>(sl % 2 == 0 ? byte >> 4 : byte & 0xF);
  }
  return t;
}

// MTU, rate and capability masks from a PortInfo. `governing_capmask`: the CapabilityMask whose
// IsExtendedSpeedsSupported bit decides whether LinkSpeedExtActive counts (a switch's port 0
// for every port of the switch, as OpenSM reads it). A width/speed combination IBA does not
// define is reported in `warnings` with the rate OpenSM would use.
void fill_port_info(PortModel& pm, uint8_t* info, uint32_t governing_capmask, bool linked,
                    const std::string& where, std::vector<std::string>& warnings) {
  pm.mtu_cap = static_cast<uint8_t>(mad_get_field(info, 0, IB_PORT_MTU_CAP_F));
  pm.capability_mask = mad_get_field(info, 0, IB_PORT_CAPMASK_F);
  pm.capability_mask2 = static_cast<uint16_t>(mad_get_field(info, 0, IB_PORT_CAPMASK2_F));
  auto width = static_cast<uint8_t>(mad_get_field(info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F));
  auto speed = static_cast<uint8_t>(mad_get_field(info, 0, IB_PORT_LINK_SPEED_ACTIVE_F));
  auto ext = static_cast<uint8_t>(mad_get_field(info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
  PortRate rate = port_rate(width, speed, ext, (governing_capmask & kCapHasExtendedSpeeds) != 0);
  pm.rate = rate.rate;
  if (!rate.known && linked) {
    warnings.push_back(fmt::format(
        "{}: LinkWidthActive {} LinkSpeedActive {} LinkSpeedExtActive {} is no rate IBA "
        "defines; its paths get rate code {} (as OpenSM computes it)",
        where, width, speed, ext, rate.rate));
  }
}

}  // namespace

std::optional<std::string> replacement_refused(const Discovery& found) {
  if (found.missing.empty()) return std::nullopt;
  return fmt::format("incomplete: {} table{} did not answer (first: {})", found.missing.size(),
                     found.missing.size() == 1 ? "" : "s", found.missing.front());
}

sa::Result<Discovery> discover_fabric(const DiscoveryOptions& options) {
  char* ca = options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str());
  ibnd_config_t config{};
  config.timeout_ms = static_cast<unsigned>(options.timeout_ms);
  config.retries = static_cast<unsigned>(options.retries);
  std::unique_ptr<ibnd_fabric_t, FabricDeleter> fabric(
      ibnd_discover_fabric(ca, options.port, nullptr, &config));
  if (!fabric) {
    return sa::make_error(sa::ErrorCode::kTransport, "libibnetdisc could not discover the fabric");
  }
  ibmad_port* mad = smp_port(options.ca, options.port);
  if (mad == nullptr) {
    return sa::make_error(sa::ErrorCode::kTransport, "cannot open the port for SMPs");
  }
  if (options.retries > 0) mad_rpc_set_retries(mad, options.retries);
  Smp smp(mad, options.timeout_ms, options.attempts);
  auto progress = [&options](const std::string& what) {
    if (options.progress) options.progress(what);
  };

  Discovery out;
  FabricModel& model = out.model;
  std::map<const ibnd_node_t*, int> index;
  for (ibnd_node_t* n = fabric->nodes; n != nullptr; n = n->next) {
    index[n] = static_cast<int>(index.size());
  }
  model.nodes.resize(index.size());
  uint8_t buf[IB_SMP_DATA_SIZE];
  bool have_prefix = false;
  size_t switches = 0;
  for (ibnd_node_t* n = fabric->switches; n != nullptr; n = n->type_next) ++switches;
  progress(fmt::format("topology: {} nodes ({} switches); reading PKey, SL2VL and LFT tables",
                       index.size(), switches));
  std::vector<SwitchTable> switch_tables;
  std::vector<SmpGet> switch_gets;
  size_t done = 0;
  const size_t step = std::max<size_t>(index.size() / 10, 1);

  for (ibnd_node_t* n = fabric->nodes; n != nullptr; n = n->next) {
    if (++done % step == 0) {
      progress(fmt::format("tables: {}/{} nodes", done, index.size()));
    }
    NodeModel& node = model.nodes[static_cast<size_t>(index[n])];
    node.guid = n->guid;
    node.type = static_cast<policy::NodeType>(n->type);
    node.description = n->nodedesc;
    node.ports.resize(static_cast<size_t>(n->numports) + 1);
    const bool is_switch = n->type == IB_NODE_SWITCH;
    const unsigned pkey_blocks = (mad_get_field(n->info, 0, IB_NODE_PARTITION_CAP_F) + 31) / 32;

    auto read_pkeys = [&](PortModel& pm, uint16_t lid) {
      for (unsigned block = 0; block < std::max(pkey_blocks, 1u); ++block) {
        if (!smp.query(lid, IB_ATTR_PKEY_TBL, block, buf)) {
          out.missing.push_back(fmt::format("no PKey table block {} from LID {}", block, lid));
          return;
        }
        for (size_t i = 0; i < 32; ++i) {
          uint16_t pkey = static_cast<uint16_t>(buf[2 * i] << 8 | buf[2 * i + 1]);
          if ((pkey & 0x7FFF) != 0) pm.pkeys.push_back(pkey);
        }
      }
    };

    uint32_t p0_capmask = 0;
    if (is_switch) {
      PortModel& p0 = node.ports[0];
      p0.present = true;
      p0.guid = n->guid;
      p0.lid = n->smalid;
      p0.lmc = n->smalmc;
      const std::string where = fmt::format("switch {:#x} port 0", n->guid);
      if (n->ports[0] != nullptr) {
        p0_capmask = mad_get_field(n->ports[0]->info, 0, IB_PORT_CAPMASK_F);
        fill_port_info(p0, n->ports[0]->info, p0_capmask, true, where, out.warnings);
      } else if (smp.query(n->smalid, IB_ATTR_PORT_INFO, 0, buf)) {
        p0_capmask = mad_get_field(buf, 0, IB_PORT_CAPMASK_F);
        fill_port_info(p0, buf, p0_capmask, true, where, out.warnings);
      }
      read_pkeys(p0, n->smalid);
      uint32_t top = mad_get_field(n->switchinfo, 0, IB_SW_LINEAR_FDB_TOP_F);
      node.lft.assign(top + 1, 0xFF);
      for (uint32_t block = 0; block * 64 <= top; ++block) {
        if (!smp.query(n->smalid, IB_ATTR_LINEARFORWTBL, block, buf)) {
          return sa::make_error(sa::ErrorCode::kTransport,
                                fmt::format("no LFT block {} from switch {:#x}", block, n->guid));
        }
        for (uint32_t i = 0; i < 64 && block * 64 + i <= top; ++i)
          node.lft[block * 64 + i] = buf[i];
      }
    }
    for (int p = 1; p <= n->numports; ++p) {
      ibnd_port_t* port = n->ports[p];
      if (port == nullptr) continue;
      PortModel& pm = node.ports[static_cast<size_t>(p)];
      pm.present = true;
      pm.guid = is_switch ? n->guid : port->guid;
      const bool active = mad_get_field(port->info, 0, IB_PORT_STATE_F) == kPortStateActive;
      const uint32_t capmask =
          is_switch ? p0_capmask : mad_get_field(port->info, 0, IB_PORT_CAPMASK_F);
      fill_port_info(pm, port->info, capmask, active,
                     fmt::format("{} {:#x} port {}", is_switch ? "switch" : "CA", n->guid, p),
                     out.warnings);
      if (port->remoteport != nullptr && active) {
        pm.peer_node = index[port->remoteport->node];
        pm.peer_port = static_cast<uint8_t>(port->remoteport->portnum);
      }
      if (!is_switch) {
        pm.lid = port->base_lid;
        pm.lmc = port->lmc;
        if (!have_prefix) {
          // The packet life without a level is OpenSM's subnet_timeout option, not what the
          // ports report (ibsim answers 31): the model keeps its default for the caller to set.
          model.subnet_prefix = mad_get_field64(port->info, 0, IB_PORT_GID_PREFIX_F);
          have_prefix = true;
        }
        if (pm.lid == 0 || !active) continue;
        read_pkeys(pm, pm.lid);
        if (smp.query(pm.lid, IB_ATTR_SLVL_TABLE, 0, buf)) {
          pm.sl2vl = {decode_sl2vl(buf)};
        } else {
          out.missing.push_back(fmt::format("no SL2VL table from LID {}", pm.lid));
        }
        continue;
      }
      if (!active) continue;
      // A switch maps SLs per (input port, output port): this output port's table for every
      // input, port 0 included (paths that start at the switch).
      // Read below, many at once.
      pm.sl2vl.assign(static_cast<size_t>(n->numports) + 1, Sl2Vl{});
      for (int in = 0; in <= n->numports; ++in) {
        if (in == p) continue;
        if (in != 0 && (n->ports[in] == nullptr || n->ports[in]->remoteport == nullptr)) continue;
        switch_tables.push_back({index[n], p, in});
        switch_gets.push_back({n->smalid, IB_ATTR_SLVL_TABLE, static_cast<uint32_t>(in << 8 | p)});
      }
    }
  }

  // The switches' SL2VL tables, one per (input, output) port pair: most of the SMPs, so many
  // in flight at once; one at a time where the port cannot do that.
  progress(fmt::format("SL2VL tables of the switches: {}", switch_gets.size()));
  auto tables = smp_get_window(mad, switch_gets, kSmpWindow,
                               options.timeout_ms > 0 ? options.timeout_ms : 1000,
                               std::max(options.attempts, 1));
  for (size_t i = 0; i < switch_tables.size(); ++i) {
    const SwitchTable& t = switch_tables[i];
    NodeModel& node = model.nodes[static_cast<size_t>(t.node)];
    std::optional<Sl2Vl> table;
    if (tables) {
      if ((*tables)[i]) table = decode_sl2vl((*tables)[i]->data());
    } else if (smp.query(switch_gets[i].lid, switch_gets[i].attr, switch_gets[i].mod, buf)) {
      table = decode_sl2vl(buf);
    }
    if (table) {
      node.ports[static_cast<size_t>(t.out)].sl2vl[static_cast<size_t>(t.in)] = *table;
    } else {
      out.missing.push_back(
          fmt::format("no SL2VL table {}->{} from switch {:#x}", t.in, t.out, node.guid));
    }
  }
  if (fabric->from_node != nullptr) {
    out.self.node = index[fabric->from_node];
    out.self.port =
        static_cast<uint8_t>(fabric->from_node->type == IB_NODE_SWITCH ? 0 : fabric->from_portnum);
    model.sm_port_guid = model.port(out.self).guid;
  }
  model.index();
  progress(fmt::format("done: {} endpoints, {} table(s) missing, {} SMP(s) sent again",
                       model.endpoints().size(), out.missing.size(), smp.retried()));
  return out;
}

}  // namespace rdmaqos::sad
