// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What M_Key protection looks like to a discovery that lacks a port's M_Key (IBA 14.2.4.1): a
// port at protection level 1 answers Gets with its PortInfo:M_Key read as 0; one at level 2 or 3
// answers no SMP at all, so whatever is behind the live link to it stays unseen. Pure functions
// over a scan; internal to rdma-qos-sad's discovery library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discovery_scan.h"

namespace rdmaqos::sad {

struct MKeySigns {
  // Ports whose link is up but across which no node answered (a switch's external ports and
  // the port discovery ran from; other CA ports may lead out of the subnet): one line each,
  // naming node GUID, port, LID and the directed route to the silent node.
  std::vector<std::string> unanswered;
  // Ports with M_KeyProtectBits set whose M_Key read as 0: level 1 without their M_Key. Gets
  // are answered all the same, so the model is complete; one line for all of them.
  std::optional<std::string> level1;
};

MKeySigns m_key_signs(const Scan& scan);

}  // namespace rdmaqos::sad
