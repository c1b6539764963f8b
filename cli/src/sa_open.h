// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Opening an SA client for a subcommand with the sa_lid knob applied to the port it opens.
#pragma once

#include <memory>

#include "rdma-qos/config/port_values.h"
#include "rdma-qos/sa-client/client.h"

namespace rdmaqos::cli {

// Opens `options` (its sa_lid, when set, wins: a command-line option). Otherwise the SA's LID is
// the one `lids` (the sa_lid knob) gives the port actually opened, which the caller may not
// have named (the first active port), else that port's SM LID.
rdmaqos::Result<std::unique_ptr<sa::Client>> open_sa_client(sa::ClientOptions options,
                                                            const config::PortValues& lids);

}  // namespace rdmaqos::cli
