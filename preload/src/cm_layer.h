// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's steps, called by the interposers in rdmacm_interposers.cpp: on RoCE the
// host policy's decision (TOS before route resolution, the QP's decision for the verbs layer),
// on InfiniBand the SA's answer installed as the route. Each step may throw; the interposers
// catch, log once and carry on with what the program asked.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "config.h"
#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/shared_client.h"

namespace rdmaqos::preload {

bool is_ethernet(rdma_cm_id* id);
bool is_infiniband(rdma_cm_id* id);
// The PKey host-side matching uses: the id's own (RoCE ports have the default 0xFFFF).
uint16_t id_pkey(rdma_cm_id* id);

// The test hook's line for one decision (nothing when the hook is off).
void record_decision(const CmConfig& c, const char* call,
                     const std::optional<rdmacm::CmDecision>& d, uint64_t sid,
                     std::optional<uint16_t> qos_class, std::optional<uint8_t> tos_set,
                     const providers::CmConnection* cm,
                     std::optional<uint8_t> received_tclass = std::nullopt);

// The SA client of a device's port, shared by rdma_cm and plain-verbs QPs (ib_route_sa.cpp);
// null when the port cannot reach an SA now (logged once, tried again after a back-off).
std::shared_ptr<sa::SharedClient> port_sa_client(const std::string& device, int port_num,
                                                 const CmConfig& c);

// InfiniBand (ib_route_sa.cpp): query the SA with Service-ID and QoS-Class and install the
// answer. True when the route is resolved (the caller must not call the real
// rdma_resolve_route).
bool resolve_ib(rdma_cm_id* id, int timeout_ms);

// RoCE, active side, before route resolution: decide, and set the level's TOS so the route
// (and the DSCP on the wire) carries it.
void before_resolve_route(rdma_cm_id* id);
// RoCE, both sides, when the QP is about to reach RTR: tell the verbs layer.
void register_qp(rdma_cm_id* id, bool passive);
// RoCE UD ids: the address handle attributes librdmacm hands the program get the id's decision.
void on_ud_event(rdma_cm_event* ev);

}  // namespace rdmaqos::preload
