// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The authorization suite's fabric, partitions, policy and rules (see authorization_rules.h).
#include "authorization_rules.h"

#include <fmt/format.h>

namespace rdmaqos::sad::authorization {
namespace {

// OpenSM walks P_Key maps keyed by the network-order value: on a little-endian host, the
// byte-swapped order.
uint16_t swapped(uint16_t k) {
  return static_cast<uint16_t>((k & 0xFF) << 8 | k >> 8);
}

}  // namespace

const testbed::Topology& tree() {
  static const testbed::Topology t = testbed::make_fat_tree({});
  return t;
}
uint64_t port_guid(const std::string& node) {
  return tree().node(node).port_guid;
}
uint16_t lid(const std::string& node) {
  return tree().node(node).lid;
}
std::string guid_text(const std::string& node) {
  return fmt::format("{:#018x}", port_guid(node));
}

// ---------------------------------------------------------------------------------------------
// The partitions. OpenSM makes every port a limited member of the Default partition before it
// reads the file (and the SM's port a full one), so a port the file does not make a full member
// of Default shares it with full members only.

// What OpenSM programs into each CA's P_Key table.
const std::map<std::string, std::vector<Membership>>& members() {
  static const std::map<std::string, std::vector<Membership>> m = {
      {"sm01", {{kDefault, true}}},
      {"node001", {{kDefault, true}, {kRed, true}}},
      {"node002", {{kDefault, true}, {kBlue, true}}},
      {"node003", {{kDefault, true}}},
      {"node004", {{kDefault, false}, {kRed, true}}},
      {"node005", {{kDefault, false}, {kRed, false}}},  // limited everywhere
      {"node006", {{kDefault, false}, {kRed, false}, {kBlue, true}}},
      {"node007", {{kDefault, false}, {kBlue, false}}},  // limited everywhere
      {"node008", {{kDefault, false}, {kBlue, false}}},  // limited everywhere
  };
  return m;
}

std::string partitions() {
  return fmt::format(
      "Default=0x7fff, ipoib : {}=full, {}=full, {}=full, {}=full;\n"
      "Red=0x30, ipoib, sl=1 : {}=full, {}=full, {}=limited, {}=limited;\n"
      "Blue=0x40, sl=3 : {}=full, {}=full, {}=limited, {}=limited;\n",
      guid_text("sm01"), guid_text("node001"), guid_text("node002"), guid_text("node003"),
      guid_text("node001"), guid_text("node004"), guid_text("node005"), guid_text("node006"),
      guid_text("node002"), guid_text("node006"), guid_text("node007"), guid_text("node008"));
}

std::optional<Membership> holds(const std::string& node, uint16_t pkey) {
  for (const Membership& m : members().at(node))
    if (m.pkey == (pkey & 0x7FFF)) return m;
  return std::nullopt;
}

// osm_physp_share_this_pkey: both hold it, at least one as a full member.
bool share_this(const std::string& a, const std::string& b, uint16_t pkey) {
  auto x = holds(a, pkey), y = holds(b, pkey);
  return x && y && (x->full || y->full);
}

// osm_physp_share_pkey: the same port, or some P_Key shared as above.
bool share(const std::string& a, const std::string& b) {
  if (a == b) return true;
  for (const Membership& m : members().at(a))
    if (share_this(a, b, m.pkey)) return true;
  return false;
}

// The requester, the source and the destination pairwise (pr_rcv_get_port_pair_paths).
bool requester_may(const std::string& r, const std::string& s, const std::string& d) {
  return share(r, s) && share(r, d) && share(s, d);
}

// ---------------------------------------------------------------------------------------------
// The policy: levels that name P_Keys and SLs, reached by what a request names (QoS class,
// Service-ID, P_Key) or by its destination.

std::string policy() {
  return fmt::format(R"(port-groups
  port-group
    name: Storage
    port-guid: {}
  end-port-group
end-port-groups

qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: RED
    sl: 2
    pkey: 0x30
  end-qos-level
  qos-level
    name: BLUE
    sl: 1
    pkey: 0x40
  end-qos-level
  qos-level
    name: STOR
    sl: 3
  end-qos-level
end-qos-levels

qos-match-rules
  qos-match-rule
    qos-class: 4
    qos-level-name: RED
  end-qos-match-rule
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: BLUE
  end-qos-match-rule
  qos-match-rule
    pkey: 0x40
    qos-level-name: BLUE
  end-qos-match-rule
  qos-match-rule
    destination: Storage
    qos-level-name: STOR
  end-qos-match-rule
end-qos-match-rules
)",
                     guid_text("node003"));
}

// ---------------------------------------------------------------------------------------------
// Requests.

// The level a request from `s` to `d` gets (first matching rule, else DEFAULT).
const Level& level_of(const Ask& a, const std::string& d) {
  if (a.qos_class == 4) return kRedLevel;
  if (a.service_id == kBlueServiceId) return kBlueLevel;
  if (a.pkey && (*a.pkey & 0x7FFF) == kBlue) return kBlueLevel;
  if (d == "node003") return kStorageLevel;
  return kDefaultLevel;
}

// The P_Key and SL of the one record the rules allow for a pair, or none.
std::optional<Expected> expected(const std::string& r, const std::string& s, const std::string& d,
                                 const Ask& a, bool check_requester) {
  if (check_requester && !requester_may(r, s, d)) return std::nullopt;
  const Level& level = level_of(a, d);
  uint16_t pkey = 0;
  if (a.raw) {
    pkey = 0;  // any shared P_Key or none; the record carries 0
  } else if (a.pkey) {
    if (!share_this(s, d, *a.pkey)) return std::nullopt;
    if (level.pkey && *level.pkey != (*a.pkey & 0x7FFF)) return std::nullopt;
    pkey = *a.pkey;  // echoed as sent
  } else if (level.pkey) {
    if (!share_this(s, d, *level.pkey)) return std::nullopt;
    pkey = *level.pkey;
  } else {
    std::optional<Membership> best;
    for (const Membership& m : members().at(s))
      if (share_this(s, d, m.pkey) && (!best || swapped(m.pkey) < swapped(best->pkey))) best = m;
    if (!best) return std::nullopt;
    pkey = static_cast<uint16_t>(best->pkey | (best->full ? 0x8000 : 0));
  }
  if (a.sl && *a.sl != level.sl) return std::nullopt;
  return Expected{pkey, level.sl};
}

}  // namespace rdmaqos::sad::authorization
