// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Which path queries OpenSM's own handler answers although a model is in force: those whose
// answer depends on what the model does not copy from OpenSM (live multicast groups and their
// members, alias GUIDs, ports newer than the model, ports not yet Active, empty P_Key tables,
// the MultiPathRecord handler's own SL rule), so the plugin gives OpenSM's answer or none of its
// own.
#pragma once

#include <optional>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-responder/answer.h"

namespace rdmaqos::osmp {

// Why OpenSM's handler must answer `mad` (a decoded request from a requester the model knows,
// `ctx` set up for it, its record `decoded` by sad::decode_query), or nullopt when the plugin's
// answer is OpenSM's. A record that does not decode is the engine's to refuse, as OpenSM does.
std::optional<Engine::Fallback> opensm_decides(const sa::SaMad& mad,
                                               const sad::DecodedQuery& decoded,
                                               const Snapshot& now, const sad::AnswerContext& ctx);

}  // namespace rdmaqos::osmp
