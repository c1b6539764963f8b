// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// When rdma-qos-sad re-discovers the fabric before its period is up: its port's LID or its SM's
// LID moved (an SM took over, re-swept, or re-numbered the port), so the model may name ports at
// LIDs they no longer have; or a LID the model does not know asked for paths (a host that came
// up since), which gets no answer until the model has it. A decision over what the daemon
// observes, with no I/O and no clock of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace rdmaqos::sad {

// A port's own LID and its SM's, as its sysfs files say.
struct PortLids {
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  friend bool operator==(const PortLids&, const PortLids&) = default;
};

class RediscoveryTrigger {
 public:
  using Clock = std::chrono::steady_clock;
  // Unknown requesters re-discover at most once per this long: a LID that discovery never finds
  // (a spoofed one, a port beyond a router) must not keep the fabric busy with SMPs.
  static constexpr std::chrono::seconds kUnknownRequesterGap{60};

  // `discovered_with`: the port's LIDs when the model in force was discovered.
  explicit RediscoveryTrigger(PortLids discovered_with) : known_(discovered_with) {}

  // One reading of the port (nullopt: unreadable or not active, which says nothing). True when
  // the LIDs differ from the known ones and the previous reading said the same, so a sweep
  // that is still moving them is not chased: re-discover now. They are the known ones then.
  bool port_read(std::optional<PortLids> now) {
    if (!now) return false;
    const bool settled = previous_ == now;
    previous_ = now;
    if (*now == known_ || !settled) return false;
    known_ = *now;
    return true;
  }

  // A path query from a LID the model does not know came at `now`. True when that is worth a
  // re-discovery: the first time, then once kUnknownRequesterGap has passed since the last.
  bool unknown_requester(Clock::time_point now) {
    if (last_unknown_ && now - *last_unknown_ < kUnknownRequesterGap) return false;
    last_unknown_ = now;
    return true;
  }

  const PortLids& known() const { return known_; }

 private:
  PortLids known_;
  std::optional<PortLids> previous_;
  std::optional<Clock::time_point> last_unknown_;
};

}  // namespace rdmaqos::sad
