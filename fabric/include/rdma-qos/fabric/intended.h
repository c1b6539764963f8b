// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The tables a port should hold: OpenSM's per-class tables from opensm.conf (qos_ca_*,
// qos_sw0_*, qos_swe_*, qos_rtr_*), replaced where a qos-setup scope of the policy selects the
// port, then cut to what the port can hold the way OpenSM cuts them (VLs masked to the
// operational VLs, VLArb tables to the port's capability).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/fabric/setup_scopes.h"
#include "rdma-qos/fabric/tables.h"

namespace rdmaqos::fabric {

struct IntendedPort {
  std::map<uint8_t, Sl2Vl> sl2vl;  // by input port; empty when the port maps no SLs
  std::map<uint8_t, std::string> sl2vl_source;
  std::optional<VlArbTable> vlarb_high, vlarb_low;  // nullopt: no VL arbitration (one data VL)
  std::string vlarb_source;
  uint8_t vl_high_limit = 0;
  // Where the wanted tables do not fit the port (entries cut, VLs folded): not differences,
  // what the administrator asked for cannot be held.
  std::vector<std::string> too_long;
};

// What a source table needs, once cut to a port (OpenSM's rules, osm_qos.c).
Sl2Vl mask_sl2vl(const Sl2Vl& table, uint8_t oper_vls);
// Entry i of the port's table: entries [0, min(cap, 32)) then, for cap > 32, [32, 32 + cap % 32).
VlArbTable cut_vlarb(const VlArbTable& table, uint8_t cap, uint8_t oper_vls);
// The input ports a switch output port has SL2VL tables for (OpenSM programs them all).
std::vector<uint8_t> sl2vl_inputs(const NodeTables& node, const PortTables& out);
// Whether OpenSM programs this port's QoS tables at all (switch port 0 only when enhanced).
bool programmed(const NodeTables& node, const PortTables& port);

class Planner {
 public:
  Planner(policy::QosConfig conf, std::optional<SetupScopes> scopes);
  IntendedPort plan(const NodeTables& node, const PortTables& port,
                    const std::function<std::optional<PortRef>(uint8_t)>& peer_of) const;
  const std::optional<SetupScopes>& scopes() const { return scopes_; }

 private:
  policy::QosConfig conf_;
  std::optional<SetupScopes> scopes_;
};

}  // namespace rdmaqos::fabric
