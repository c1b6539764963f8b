// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's fabric model built from what OpenSM knows of its subnet: nodes, ports (LIDs,
// LMC, MTU, link rates, state, peers), PKey and SL2VL tables and switch LFTs, fed one fact at
// a time by the OpenSM side and turned into the same model rdma-qos-sad's discovery builds.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "rdma-qos/opensm-plugin/plugin.h"
#include "rdma-qos/sa-responder/fabric_model.h"

namespace rdmaqos::osmp {

class FabricBuilder {
 public:
  void sm_port_guid(uint64_t guid) { sm_port_guid_ = guid; }
  void routing(sad::RoutingFacts facts) { routing_ = std::move(facts); }
  void original_extended_rates_only(bool on) { original_rates_ = on; }
  // The SM's live multicast groups: once known (even none), the model's multicast_groups.
  // An alias GUID of a port (its own GUID is ignored).
  void alias(uint64_t port_guid, uint64_t alias_guid) {
    if (alias_guid != port_guid) aliased_.insert(port_guid);
  }
  void groups_known() {
    if (!groups_) groups_.emplace();
  }
  void group(const sad::MulticastGroup& g) {
    groups_known();
    groups_->push_back(g);
  }
  // Returns the node's index; ports 0..num_ports.
  int node(uint64_t guid, uint8_t type, std::string description, uint8_t num_ports);
  void port(int node, uint8_t port, const rdma_qos_osmp_port& info);
  void pkey(int node, uint8_t port, uint16_t pkey);
  void sl2vl(int node, uint8_t port, uint8_t in_port, const std::array<uint8_t, 8>& raw);
  void lft(int node, std::vector<uint8_t> table);

  // The model, indexed, as discovery would have built it from the same fabric: ports linked
  // only when active, PKeys and SL2VL tables of active CA ports with a LID, SL2VL tables of
  // active switch ports per input port, switch port 0's PKeys; and, beyond discovery, the ports
  // OpenSM answers for although they are not Active (inactive_endpoints, inactive_switch_ports).
  // Facts naming an unknown node or port are ignored.
  sad::FabricModel build() const;

 private:
  struct PortFacts {
    bool present = false;
    rdma_qos_osmp_port info{};
    std::vector<uint16_t> pkeys;
    std::map<uint8_t, sad::Sl2Vl> sl2vl;  // by input port
  };
  struct NodeFacts {
    uint64_t guid = 0;
    uint8_t type = 1;
    std::string description;
    std::vector<PortFacts> ports;
    std::vector<uint8_t> lft;
  };
  PortFacts* find(int node, uint8_t port);
  // Fills the model's inactive_endpoints and inactive_switch_ports; `by_guid`: node indexes.
  void find_inactive(const std::unordered_map<uint64_t, int>& by_guid,
                     sad::FabricModel& model) const;

  std::vector<NodeFacts> nodes_;
  uint64_t sm_port_guid_ = 0;
  sad::RoutingFacts routing_;
  bool original_rates_ = false;
  std::optional<std::vector<sad::MulticastGroup>> groups_;
  std::set<uint64_t> aliased_;
};

// SL -> VL from the 8 bytes of an SLtoVLMappingTable (SL 2n in the high nibble of byte n).
sad::Sl2Vl decode_sl2vl(const std::array<uint8_t, 8>& raw);

}  // namespace rdmaqos::osmp
