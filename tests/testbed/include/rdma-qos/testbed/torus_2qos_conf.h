// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// OpenSM's torus-2QoS.conf for a generated torus or mesh, so tests can run the torus-2QoS routing
// engine (which finds no torus unless told its radices and where its axes start).
#pragma once

#include <string>

#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::testbed {

// The radices of a torus_spec (z = 1) or torus3d_spec fabric; `mesh` for a mesh_spec one (no
// wrap-around links).
struct TorusRadix {
  int x = 3;
  int y = 3;
  int z = 1;
  bool mesh = false;
};

// The file's text for `topology` (make_switch_graph of torus_spec(x, y), torus3d_spec(x, y, z) or
// mesh_spec(x, y)): the radices, and one seed at switch (0, 0, 0) naming its neighbours in both
// directions of every dimension of radix above 1 (torus-2QoS needs both for a radix-4 dimension
// and accepts both for any); on a mesh, where (0, 0, 0) is a corner, its neighbour in the plus
// direction only. Switch GUIDs are the topology's. Throws std::out_of_range when a switch is
// missing.
std::string torus_2qos_conf(const Topology& topology, TorusRadix radix);

}  // namespace rdmaqos::testbed
