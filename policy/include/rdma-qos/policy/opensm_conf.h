// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// OpenSM's opensm.conf QoS options (qos_[ca|rtr|sw0|swe]_{max_vls, high_limit, vlarb_high,
// vlarb_low, sl2vl} and their unprefixed defaults) and what they mean for bandwidth: each VL's
// share under saturation and the high-priority burst (seed 004 explains the arithmetic).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/diagnostic.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::policy {

enum class PortClass { kCa, kRouter, kSwitchPort0, kSwitchExternal };
inline constexpr std::array<PortClass, 4> kPortClasses = {
    PortClass::kCa, PortClass::kRouter, PortClass::kSwitchPort0, PortClass::kSwitchExternal};
std::string_view port_class_prefix(PortClass c);  // "ca", "rtr", "sw0", "swe"

struct VlArbEntry {
  uint8_t vl = 0;
  uint8_t weight = 0;  // 64-byte credits
};

struct QosPortConfig {
  int max_vls = 15;
  int high_limit = 0;  // units of 4 KB; 255 = unbounded; 0 = one packet
  std::vector<VlArbEntry> vlarb_high, vlarb_low;
  std::array<uint8_t, 16> sl2vl{};  // VL 15 drops the SL
};

// OpenSM's hard-coded defaults (seed 003 section 7).
QosPortConfig default_qos_port_config();

struct QosConfig {
  bool qos = false;                    // the `qos` option
  std::array<QosPortConfig, 4> ports;  // indexed by PortClass
  const QosPortConfig& port(PortClass c) const { return ports[static_cast<size_t>(c)]; }
};

// The other opensm.conf options an SA needs (nullopt: not in the file, OpenSM's default
// applies). sm_sl is read so a caller can report it; PathRecord answers do not depend on it.
struct SmOptions {
  std::optional<std::string> qos_policy_file;        // qos_policy_file
  std::optional<std::string> partition_config_file;  // partition_config_file
  std::optional<uint8_t> subnet_timeout;             // 0..31: packet life without a level value
  std::optional<uint8_t> sm_sl;                      // 0..15
  std::optional<uint64_t> sa_key;                    // SM_Key of trusted SA requests
  // SMPs the SM keeps in flight (0: OpenSM sets no bound); an SA that discovers the fabric
  // itself keeps to the same.
  std::optional<uint32_t> max_wire_smps;
  // The M_Key OpenSM gives every port (0: none); what an SA's own SMPs must carry where the
  // ports are M_Key-protected.
  std::optional<uint64_t> m_key;
  // use_original_extended_sa_rates_only: records carry only the rates drivers knew before the
  // extended speeds (OpenSM reads exactly "TRUE" as true).
  std::optional<bool> original_extended_rates_only;
  // routing_engine: the engines OpenSM tries in order (falling back to minhop); empty: minhop.
  std::vector<std::string> routing_engines;
};

// Whether OpenSM's routing engine `name` gives each path its own SL (LASH, DFSSSP, Nue: their
// path_sl) or programs SL2VL itself (torus-2QoS). Under such an engine the path's SL is the
// engine's deadlock-free layer, OpenSM's own SL-to-VL tables keep the layers apart, and the
// policy's qos-setup tables are not applied (the OpenSM plugin leaves them to OpenSM).
bool routing_engine_assigns_sls(std::string_view name);

struct OpenSmConfResult {
  QosConfig config;
  SmOptions sm;
  Diagnostics diagnostics;
};

// Reads the QoS options of an opensm.conf and the SmOptions; other options are ignored. Prefixed
// options win over unprefixed ones, which win over OpenSM's defaults, whatever their order in the
// file.
OpenSmConfResult parse_opensm_conf(std::string_view text);

struct VlShare {
  uint8_t vl = 0;
  uint32_t high_weight = 0, low_weight = 0;  // credits per table pass
  double share = 0;  // fraction of the link under saturation of every configured VL
};

struct VlArbAnalysis {
  std::vector<VlShare> vls;                  // configured VLs with a non-zero weight
  double high_fraction = 0;                  // of the link, for all high-priority VLs together
  std::optional<uint64_t> high_burst_bytes;  // nullopt: unbounded (high_limit 255)
  std::vector<std::string> warnings;
};

// Bandwidth under saturation: the high-priority table sends up to its burst (high_limit x 4 KB,
// at least one packet), then one low-priority packet; within a table, VLs share by weight.
VlArbAnalysis analyze_vlarb(const QosPortConfig& config, int mtu_bytes = 4096);

// Load-time warnings for levels whose SL an SL2VL table sends to VL 15: OpenSM then answers no
// record for every query at that level, silently.
Diagnostics check_level_sls(const Policy& policy, const QosConfig& config);

}  // namespace rdmaqos::policy
