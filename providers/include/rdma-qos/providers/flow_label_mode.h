// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The flow-label modes (RDMA_QOS_FLOW_LABEL: rfc, linux, spread, off, or a fixed label) and
// the label each gives a connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdma-qos/common/number.h"
#include "rdma-qos/common/result.h"

namespace rdmaqos::providers {

enum class FlowLabelMode { kRfc, kLinux, kSpread, kOff, kFixed };

struct FlowLabelSetting {
  FlowLabelMode mode = FlowLabelMode::kRfc;
  uint32_t fixed_label = 0;  // kFixed only: 1..0xFFFFF
};

// "rfc" (default), "linux", "spread", "off", or a label in decimal or 0x-hex (1..0xFFFFF).
// Case-insensitive; surrounding blanks ignored. Anything else: kInvalidArgument, saying what
// is accepted.
rdmaqos::Result<FlowLabelSetting> parse_flow_label_setting(std::string_view text);
std::string to_string(const FlowLabelSetting& setting);

// The label for an rdma_cm connection with CM service port `dport` and active-side CM source
// port `sport`; nullopt for kOff (leave the kernel's label alone).
std::optional<uint32_t> cm_flow_label(const FlowLabelSetting& setting, uint16_t dport,
                                      uint16_t sport);
// The label for a QP pair not set up by rdma_cm; nullopt for kOff. kLinux gives the QPN label
// too (it is what Linux does for such QPs), kSpread folds the QPNs like the RFC.
std::optional<uint32_t> qpn_flow_label(const FlowLabelSetting& setting, uint32_t lqpn,
                                       uint32_t rqpn);

// The project's number parser, used here for fixed labels, SL and TClass values.
using rdmaqos::parse_unsigned;

}  // namespace rdmaqos::providers
