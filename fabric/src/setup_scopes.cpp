// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// qos-setup scopes against ports. An SL2VL table (input port, output port) is selected when
//   its output port is in a `group`, or linked to a port of an `across` or `across-to` group
//   (any of the three that the scope names: the RFC's "all the ports of group G, and all the
//   ports connected to ports of G"; across-to is across for the output port),
//   and its input port is linked to a port of an `across-from` group, when the scope names one
//   (so across-to with across-from is the traffic from one group to the other),
//   and the port numbers are in `from` (input) and `to` (output), when given ("*": any).
// A VLArb table belongs to one port: group, or linked to any of the across groups.
// A partition group is a pkey group once the partitions name its P_Key.
#include "rdma-qos/fabric/setup_scopes.h"

#include <algorithm>
#include <concepts>

namespace rdmaqos::fabric {
namespace {

bool port_listed(bool all, const std::vector<uint8_t>& ports, uint8_t port) {
  return all || ports.empty() || std::find(ports.begin(), ports.end(), port) != ports.end();
}

// Whether a scope names a group for which `pred` holds.
template <std::predicate<const policy::PortGroup&> Pred>
bool scopes_name(const policy::Policy& policy, Pred pred) {
  auto named = [&](const std::vector<std::string>& groups) {
    return std::any_of(groups.begin(), groups.end(), [&](const std::string& name) {
      const policy::PortGroup* g = policy.find_group(name);
      return g != nullptr && pred(*g);
    });
  };
  auto any = [&](const auto& scopes) {
    return std::any_of(scopes.begin(), scopes.end(), [&](const auto& s) {
      return named(s.groups) || named(s.across) || named(s.across_to) || named(s.across_from);
    });
  };
  return any(policy.setup.sl2vl_scopes) || any(policy.setup.vlarb_scopes);
}

}  // namespace

bool scopes_need_pkeys(const policy::Policy& policy) {
  return scopes_name(policy, [](const policy::PortGroup& g) { return !g.pkeys.empty(); });
}

bool scopes_need_partitions(const policy::Policy& policy) {
  return scopes_name(policy, [](const policy::PortGroup& g) { return !g.partitions.empty(); });
}

SetupScopes::SetupScopes(policy::Policy policy, uint64_t sm_port_guid,
                         std::optional<PartitionKeys> partitions)
    : policy_(std::move(policy)), sm_port_guid_(sm_port_guid) {
  for (auto& g : policy_.port_groups) {
    if (g.partitions.empty()) continue;
    if (!partitions) {
      diagnostics_.push_back({rdmaqos::Severity::kWarning, g.location,
                              "port group '" + g.name +
                                  "': partition selectors select no port without the partitions "
                                  "(a port's P_Key table holds P_Keys, not partition names)",
                              "give the partitions file (--partitions)"});
      continue;
    }
    // The named partition's members are the ports whose P_Key table holds its P_Key, which is
    // what a pkey selector selects: the name becomes one.
    for (const auto& name : g.partitions) {
      auto it = partitions->find(name);
      if (it == partitions->end()) {
        diagnostics_.push_back(
            {rdmaqos::Severity::kWarning, g.location,
             "port group '" + g.name + "': partition '" + name + "' does not exist", ""});
        continue;
      }
      const uint16_t key = it->second & 0x7FFF;
      g.pkeys.push_back({key, key});
    }
  }
}

bool SetupScopes::empty() const {
  return policy_.setup.sl2vl_scopes.empty() && policy_.setup.vlarb_scopes.empty();
}

bool SetupScopes::in_group(const std::string& name, const PortRef& port) const {
  const policy::PortGroup* g = policy_.find_group(name);
  if (g == nullptr) return false;
  if ((g->node_types & policy::node_type_bit(port.type)) != 0) return true;
  if (policy::ranges_contain(g->port_guids, port.port_guid)) return true;
  if (g->self && port.port_guid == sm_port_guid_ && sm_port_guid_ != 0) return true;
  for (uint16_t key : port.pkeys)
    if (policy::ranges_contain(g->pkeys, key)) return true;
  for (const auto& n : g->port_names) {
    if (n.port == port.port && n.node_description == port.description) return true;
  }
  return false;
}

bool SetupScopes::in_any(const std::vector<std::string>& groups,
                         const std::optional<PortRef>& port) const {
  if (!port) return false;
  return std::any_of(groups.begin(), groups.end(),
                     [&](const std::string& g) { return in_group(g, *port); });
}

std::optional<Sl2VlChoice> SetupScopes::sl2vl(const Sl2VlSite& site) const {
  const bool is_switch = site.out.type == policy::NodeType::kSwitch;
  for (const auto& s : policy_.setup.sl2vl_scopes) {
    if (s.sl2vl.empty()) continue;
    if (!s.groups.empty() || !s.across.empty() || !s.across_to.empty()) {
      if (!in_any(s.groups, site.out) && !in_any(s.across, site.out_peer) &&
          !in_any(s.across_to, site.out_peer))
        continue;
    }
    if (!s.across_from.empty() && !in_any(s.across_from, site.in_peer)) continue;
    // An end port has one table: `from` does not narrow it.
    if (is_switch && !port_listed(s.from_all, s.from_ports, site.in)) continue;
    if (!port_listed(s.to_all, s.to_ports, site.out.port)) continue;
    Sl2VlChoice c;
    for (size_t sl = 0; sl < c.table.size() && sl < s.sl2vl.size(); ++sl) c.table[sl] = s.sl2vl[sl];
    c.scope = s.location;
    return c;
  }
  return std::nullopt;
}

std::optional<VlArbChoice> SetupScopes::vlarb(const PortRef& port,
                                              const std::optional<PortRef>& peer) const {
  for (const auto& s : policy_.setup.vlarb_scopes) {
    if (!s.groups.empty() || !s.across.empty() || !s.across_to.empty() || !s.across_from.empty()) {
      if (!in_any(s.groups, port) && !in_any(s.across, peer) && !in_any(s.across_to, peer) &&
          !in_any(s.across_from, peer))
        continue;
    }
    VlArbChoice c;
    for (auto [vl, w] : s.vlarb_high) c.high.push_back({vl, w});
    for (auto [vl, w] : s.vlarb_low) c.low.push_back({vl, w});
    c.has_high = !s.vlarb_high.empty();
    c.has_low = !s.vlarb_low.empty();
    c.high_limit = s.vl_high_limit;
    c.scope = s.location;
    return c;
  }
  return std::nullopt;
}

}  // namespace rdmaqos::fabric
