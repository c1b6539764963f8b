// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model as JSON: what `rdma-qos-sad --dump-fabric --json` prints, and how the daemon
// reads back the model its discovery child process printed (re-discovery runs in a child so
// the answering threads never wait on SMPs).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {

// The model, the paths from the discovering port to every endpoint, and the tables that did
// not answer ("missing").
nlohmann::json fabric_json(const Discovery& d);
// The model back from fabric_json's output; nullopt when it is not one (a missing field, a
// port or peer out of range).
std::optional<Discovery> discovery_from_json(const nlohmann::json& j);

}  // namespace rdmaqos::sad
