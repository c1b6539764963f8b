// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model as JSON: what `rdma-qos-sad --dump-fabric --json` prints, and how the daemon
// reads back the model its discovery child process printed (re-discovery runs in a child so
// the answering threads never wait on SMPs).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {

// The model, the paths from the discovering port to every endpoint, and the tables that did
// not answer ("missing"). A port's SL2VL tables are one string of 16 hex digits a table (the VLs
// of SL 0..15), a switch's forwarding table one string of 2 hex digits a LID.
nlohmann::json fabric_json(const Discovery& d);
// The same as one line of text (what --dump-fabric --json prints), written directly: the same
// as fabric_json(d).dump(), without building the tree.
std::string fabric_json_line(const Discovery& d);
// The model back from fabric_json's output; nullopt when it is not one (a missing field, a
// port or peer out of range).
std::optional<Discovery> discovery_from_json(const nlohmann::json& j);
// The same from the text (a line fabric_json_line wrote, or the arrays of numbers for SL2VL and
// forwarding tables earlier versions wrote), read without building the tree.
std::optional<Discovery> discovery_from_json_text(std::string_view text);

}  // namespace rdmaqos::sad
