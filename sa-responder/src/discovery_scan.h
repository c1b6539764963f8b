// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What one discovery learned from the fabric before it becomes a model: each node's SMP
// payloads (NodeInfo, SwitchInfo, every PortInfo), its links and the tables read. The full
// discovery (libibnetdisc, discovery.cpp) and the incremental one (discovery_incremental.cpp)
// both fill a Scan and assemble() turns it into the model, so both give the same model for the
// same fabric, byte for byte: nodes in node GUID order, the same warnings, the same missing
// tables. Pure functions, no I/O. Internal to rdma-qos-sad's discovery library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discovery_decode.h"
#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {

struct ScanPort {
  bool present = false;  // its PortInfo was read (set_info)
  SmpBytes info{};       // PortInfo
  PortInfoFields pi;     // decoded info
  uint64_t guid = 0;     // CA and router ports: NodeInfo's PortGUID read through the port
  // libibnetdisc's remoteport: the node and port at the other end of a physically linked port
  // that discovery reached through it (or came in through).
  bool linked = false;
  uint64_t remote_guid = 0;
  uint8_t remote_port = 0;
  // Tables, as plan_tables() asks for them.
  std::vector<uint16_t> pkeys;
  bool pkeys_read = false;
  std::vector<std::optional<Sl2Vl>> sl2vl;  // switch: by input port; CA and router: [0]
  // Incremental discovery: the directed route that reached this port (CA and router ports).
  std::vector<uint8_t> path;

  void set_info(const SmpBytes& b) {
    present = true;
    info = b;
    pi = decode_port_info(b);
  }
};

struct ScanNode {
  SmpBytes node_info{};
  NodeInfoFields ni;       // decoded node_info
  SmpBytes switch_info{};  // switches
  std::string description;
  std::vector<ScanPort> ports;  // NumPorts + 1, by port number
  std::vector<uint8_t> lft;     // switches: LinearFDBTop + 1 entries, 0xFF where unread
  std::vector<uint8_t> path;    // the directed route that reached it
  bool is_switch() const { return ni.type == kNodeTypeSwitch; }
  // NodeInfo and a port array of its size.
  void set_node_info(const SmpBytes& b) {
    node_info = b;
    ni = decode_node_info(b);
    ports.assign(static_cast<size_t>(ni.ports) + 1, ScanPort{});
  }
};

struct Scan {
  std::vector<ScanNode> nodes;  // any order
  uint64_t self_guid = 0;       // the node and port discovery ran from
  uint8_t self_port = 0;
  std::vector<std::string> missing;  // besides the tables plan_tables() names: found while reading
  ScanNode* node(uint64_t guid);
  const ScanNode* node(uint64_t guid) const;
};

// One PKey or SL2VL table the model keeps (LFTs are read with the topology).
struct TableRef {
  enum class Kind : uint8_t { kPKeys, kSl2Vl };
  Kind kind = Kind::kPKeys;
  size_t node = 0;   // index in Scan::nodes
  uint8_t port = 0;  // the port whose table it is (switch SL2VL: the output port)
  uint8_t in = 0;    // switch SL2VL: the input port
  friend bool operator==(const TableRef&, const TableRef&) = default;
};

// Every table the model of `scan` holds, as the full discovery has always read them: a switch's
// port 0 PKeys; on each active switch port, the SL2VL table from port 0 and from every other
// linked input port; on each active CA port with a LID, its PKeys and SL2VL table.
std::vector<TableRef> plan_tables(const Scan& scan);

// The tables of `plan` whose ports are as they were at the `previous` discovery, copied from it
// into `scan`; returns the rest, to be read. A port counts as unchanged when its node (GUID,
// type, port count) was there before, its LID (an endpoint's) is the same and the peer at the
// other end of its link is the same (a switch table: at its output port and at its input port).
// A table whose port changed, or which the previous model did not read, is read again.
std::vector<TableRef> take_over_tables(Scan& scan, const std::vector<TableRef>& plan,
                                       const FabricModel& previous);

// The model of `scan`: nodes in node GUID order, peers only across active links, each table
// plan_tables() names and the scan lacks in `missing`, warnings for link rates IBA does not
// define. Nullopt when the node discovery ran from is not in the scan.
std::optional<Discovery> assemble(const Scan& scan);

// What differs between two models, for the log: nodes that came and went (by GUID), ports whose
// link or LID changed.
struct ModelChanges {
  size_t nodes_added = 0, nodes_gone = 0, links_changed = 0, lids_changed = 0;
  bool any() const { return nodes_added + nodes_gone + links_changed + lids_changed > 0; }
};
ModelChanges compare_models(const FabricModel& before, const FabricModel& after);

}  // namespace rdmaqos::sad
