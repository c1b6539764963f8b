// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Explain, live: what the running SA answers to one concrete path query, which rule and level
// decided it, and why a LID combination got no record (an SL on VL 15 at a named hop, no shared
// partition, a selector that cannot be met, no route). Shared by rdma-qos-sad and the OpenSM
// plugin (their "explain" control command); a pure function over the snapshot in force.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-responder/answer.h"

namespace rdmaqos::sad {

// The query, as `rdma-qos path` names it: each end by LID or GID (a LID names that one LID of
// the port's range, as a PathRecord's SLID / DLID does), and the fields a policy matches on.
struct ExplainRequest {
  std::optional<uint16_t> slid, dlid;
  std::optional<sa::Gid> sgid, dgid;
  std::optional<uint64_t> service_id;
  std::optional<uint16_t> qos_class;  // 12 bits
  std::optional<uint16_t> pkey;
  std::optional<uint8_t> sl;  // 0..15
  // MTU, rate and packet-life requirements with their selector, as PathRecord codes.
  struct Selected {
    sa::Selector selector = sa::Selector::kExactly;
    uint8_t value = 0;  // 0..63
    friend bool operator==(const Selected&, const Selected&) = default;
  };
  std::optional<Selected> mtu, rate, packet_life;
};

// The control request's fields ({"command": "explain", "slid": 2, "dgid": "fe80::...",
// "rate": {"selector": 1, "value": 7}}): from an untrusted client, so every field is checked
// (type and range); unknown fields are errors.
rdmaqos::Result<ExplainRequest> parse_explain_request(const nlohmann::json& body);
// The same fields as the control request carries them (what the CLI sends).
nlohmann::json explain_request_json(const ExplainRequest& request);
// The query explain puts to the answer engine: a PathRecord GetTable of the request's fields, on
// nobody's behalf (nullopt when its record does not encode). A front end that hands some queries
// to another SA (the OpenSM plugin) asks it of that rule too.
std::optional<sa::SaMad> explain_query(const ExplainRequest& request);

// The reply's body: {"answered": bool, "source": {...}, "destination": {...}, "rule": {...} or
// null, "level": {...} or null, "records": [...], "no_record": [{"slid", "dlid", "reason",
// "detail"}...], "summary": text}; a reason is the stats' name of the rejection
// (rejection_name: "no_route", "level_sl_dropped", ...). `policy_file` names the policy in rule and
// level locations.
// {"answered": false, "error": text} when an end names no port of the model.
nlohmann::json explain(const AnswerContext& ctx, const ExplainRequest& request,
                       const std::string& policy_file);

}  // namespace rdmaqos::sad
