// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution with the policy's inputs: the PathRecord query carrying the
// Service-ID and (when the SA advertises QoS) the QoS-Class, and what is installed through
// rdma_set_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH) in place of rdma_resolve_route. Queries
// and answers are sa::PathRecord values; the one conversion to the kernel's wire layout is
// path_data(). The sequence that asks the SA and installs the answer belongs to the module
// that owns the id and the SA client (the preload module's ib_route_sequence.h).
#pragma once

#include <infiniband/sa.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::rdmacm {

// The only flags the kernel accepts for the path it uses: GMP | PRIMARY | BIDIRECTIONAL (0x2B).
inline constexpr uint32_t kInstalledPathFlags =
    IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;

struct IbRouteInputs {
  sa::Gid sgid{};
  sa::Gid dgid{};
  uint16_t pkey = 0xFFFF;
  uint64_t service_id = 0;
  std::optional<uint16_t> qos_class;  // sent only when the SA advertises QoS
  std::optional<uint8_t> tclass;      // IPv6: the source's traffic class
};

// An rdma_cm id's GID (network byte order, as in its route) as a value.
sa::Gid gid_of(const ibv_gid& gid);

// The query: SGID, DGID, PKey, Service-ID, reversible, one path; QoS-Class only when
// `sa_advertises_qos`; TClass when given.
sa::PathQuery build_path_query(const IbRouteInputs& in, bool sa_advertises_qos);

// What rdma_set_option(RDMA_OPTION_IB_PATH) gets for an answer: the record in the kernel's wire
// layout; nullopt when it cannot be encoded.
std::optional<ibv_path_data> path_data(const sa::PathRecord& answer);

// The decision rdma_qos_query reports for an installed SA answer: what the query matched on, and
// the answer's SL, MTU and rate (the SA does not say which rule or level matched: rule and
// level stay unset, and InfiniBand has no traffic class of ours). The rate is the path's, not
// known to be a level's rate-limit: level_rate_limit stays false, so nothing paces at it.
CmDecision decision_from_path(const sa::PathRecord& answer, uint64_t service_id,
                              std::optional<uint16_t> qos_class);

// The SA's answer to a path query.
using PathAnswer = rdmaqos::Result<std::vector<sa::PathRecord>>;

}  // namespace rdmaqos::rdmacm
