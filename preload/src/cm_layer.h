// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's steps, called by the interposers in rdmacm_interposers.cpp: on RoCE the
// host policy's decision (TOS before route resolution, the QP's decision for the verbs layer),
// on InfiniBand the SA's answer installed as the route. Each step may throw; the interposers
// catch, log once and carry on with what the program asked.
#pragma once

#include <rdma/rdma_cma.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "config.h"
#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/shared_client.h"

namespace rdmaqos::preload {

// The link layer of the id's port (IBV_LINK_LAYER_*), -1 when unknown.
int link_layer(rdma_cm_id* id);
bool is_ethernet(rdma_cm_id* id);
// The PKey host-side matching uses: the id's own (RoCE ports have the default 0xFFFF).
uint16_t id_pkey(rdma_cm_id* id);

// What the test hook says of a connection's tag: the one sent (active side), or the one
// received and whether this host's level agreed with the active side's (passive side).
struct TagRecord {
  rdmacm::CmTag tag;
  std::optional<bool> agrees;  // passive side only
};

// The test hook's line for one decision (nothing when the hook is off).
void record_decision(const CmConfig& c, const char* call,
                     const std::optional<rdmacm::CmDecision>& d, uint64_t sid,
                     std::optional<uint16_t> qos_class, std::optional<uint8_t> tos_set,
                     const providers::CmConnection* cm,
                     std::optional<uint8_t> received_tclass = std::nullopt,
                     const TagRecord* tag = nullptr);

// The SA questions of a device's port, shared by rdma_cm and plain-verbs QPs (ib_route_sa.cpp):
// the node's path service (path_service knob) while it runs, else the process's own SA client;
// null when the port cannot reach an SA now (logged once, tried again after a back-off).
std::shared_ptr<sa::PortPaths> port_sa_client(const std::string& device, int port_num,
                                              const CmConfig& c);

// An SA that timed out or could not be reached from the port: port_sa_client gives no client for
// `hold` (sa_backoff knob), so connections meanwhile fall back at once.
void mark_port_sa_down(const std::string& device, int port_num, std::chrono::seconds hold);

// InfiniBand (ib_route_sa.cpp): query the SA with Service-ID and QoS-Class and install the
// answer. True when the route is resolved, or, for an id with an event channel, will be: a route
// worker asks the SA and then installs the path or calls the real rdma_resolve_route (the caller
// must not call it). The caller has found `id`'s port to be InfiniBand (rdma_resolve_route looks
// at the link layer once for both steps).
bool resolve_ib(rdma_cm_id* id, int timeout_ms);

// RoCE (the caller checked the link layer), active side, before route resolution: decide, and
// set the level's TOS so the route (and the DSCP on the wire) carries it.
void before_resolve_route(rdma_cm_id* id);
// What rdma_connect passes on instead of the program's parameters when the module adds the
// connection tag (cm_tag knob; rdmacm-qos/cm_tag.h): the program's parameters with 56 bytes of
// private data, the program's own first and the tag last.
struct ConnectTag {
  bool added = false;
  rdma_conn_param param{};
  std::array<uint8_t, rdmacm::kCmReqPrivateDataSize> data{};
};

// Both sides, when the QP is about to reach RTR: tell the verbs layer. The active side's
// rdma_connect also gives the program's parameters and `tag`, which is filled when the
// connection gets the tag (RoCE RC ids with a host policy, whose program leaves room).
void register_qp(rdma_cm_id* id, bool passive, const rdma_conn_param* program_param = nullptr,
                 ConnectTag* tag = nullptr);
// RoCE UD ids: the address handle attributes librdmacm hands the program get the id's decision.
void on_ud_event(rdma_cm_event* ev);

// The passive side of the connection tag: a CONNECT_REQUEST's tag is taken out of the private
// data librdmacm hands the program (zeroed) and kept for the id's rdma_accept.
void take_connection_tag(rdma_cm_event* ev);

}  // namespace rdmaqos::preload
