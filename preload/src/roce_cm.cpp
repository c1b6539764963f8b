// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE, where there is no SA: the host policy decides at connection setup (TOS before route
// resolution, the QP's decision for the verbs layer on both sides, UD address handles).
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cm_layer.h"
#include "log.h"
#include "rdma-qos/providers/qp_registry.h"
#include "real_calls.h"
#include "rsockets.h"
#include "test_record.h"
#include "ud_peers.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::CmDecision;
using rdmacm::IdRegistry;
using rdmacm::IdState;

bool is_roce_v2(rdma_cm_id* id, uint8_t sgid_index) {
  if (!is_ethernet(id)) return false;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(id->verbs, id->port_num, sgid_index, &entry, 0) != 0) return false;
  return entry.gid_type == IBV_GID_TYPE_ROCE_V2;
}

// rdma_set_option(TOS) with the one byte the kernel takes; the program's TOS when it worked.
bool set_tos(rdma_cm_id* id, uint8_t byte) {
  auto set = real_rdmacm().set_option;
  return set != nullptr && set(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) == 0;
}

}  // namespace

void before_resolve_route(rdma_cm_id* id) {
  const CmConfig& c = cm_config();
  if (!is_ethernet(id)) return;
  auto& ids = IdRegistry::instance();
  if (connecting_socket) {
    // rsockets passes no TOS to its id itself: give it the one the socket asked for.
    if (connecting_socket->tos && set_tos(id, *connecting_socket->tos))
      ids.set_program_tos(id, *connecting_socket->tos);
    if (connecting_socket->qos_class) ids.set_class(id, *connecting_socket->qos_class);
  }
  // IPv6: a traffic class in the destination's sin6_flowinfo is the program's TOS, unless it
  // set one with rdma_set_option (the kernel itself would ignore it).
  if (!ids.get(id).inputs.program_tos)
    if (auto tclass = rdmacm::address_traffic_class(&id->route.addr.dst_addr))
      if (set_tos(id, *tclass)) ids.set_program_tos(id, *tclass);
  IdState st = ids.get(id);
  uint64_t sid =
      rdmacm::effective_service_id(id->ps, &id->route.addr.dst_addr, st.inputs, c.settings);
  auto qos_class = rdmacm::effective_qos_class(st.inputs, c.settings);
  auto d = rdmacm::decide_roce(sid, qos_class, id_pkey(id), c.settings, st.inputs.program_tos);
  auto tos = rdmacm::tos_to_set(d, st.inputs, c.settings);
  if (tos && !set_tos(id, *tos))
    log_once("set_tos", fmt::format("rdma_set_option(TOS {}) failed: {}; the connection keeps "
                                    "its TOS",
                                    *tos, strerror(errno)));
  if (d) ids.set_decision(id, *d);
  record_decision(c, "rdma_resolve_route", d, sid, qos_class, tos, nullptr);
}

void register_qp(rdma_cm_id* id, bool passive) {
  if (id->qp == nullptr) return;
  // Whatever the link: the verbs layer must not take it for a plain-verbs QP (on InfiniBand
  // its path, and level, came from the SA's answer to the rdma_cm query, or the kernel's).
  providers::QpRegistry::instance().mark_rdma_cm(id->qp);
  if (!is_ethernet(id)) return;
  const CmConfig& c = cm_config();
  auto& ids = IdRegistry::instance();
  providers::CmConnection cm =
      rdmacm::cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, passive);
  // The passive side tells from the REQ's path record whether the active side's label was the
  // program's own.
  if (passive && id->route.path_rec != nullptr && id->route.num_paths > 0)
    cm.application_label = rdmacm::passive_application_label(
        ntohl(id->route.path_rec[0].flow_label), cm.dport, cm.sport);
  if (cm.dport != 0 && cm.sport != 0) providers::QpRegistry::instance().set_cm(id->qp, cm);
  IdState st = ids.get(id);
  std::optional<CmDecision> d = st.decision;
  // Without a decision (no policy) the record still names what was matched on.
  uint64_t sid =
      d ? d->service_id : rdmacm::effective_service_id(id->ps, cm.dport, st.inputs, c.settings);
  std::optional<uint16_t> qos_class =
      d ? d->qos_class : rdmacm::effective_qos_class(st.inputs, c.settings);
  std::optional<uint8_t> received_tclass;
  if (passive) {
    // The REQ's path (the connection's path record) carries the active side's TOS.
    if (id->route.path_rec != nullptr && id->route.num_paths > 0)
      received_tclass = id->route.path_rec[0].traffic_class;
    d = st.inputs.class_override
            ? rdmacm::decide_roce(sid, qos_class, id_pkey(id), c.settings)
            : rdmacm::decide_roce_passive(sid, received_tclass, id_pkey(id), c.settings);
    if (d) {
      if (!st.inputs.class_override) qos_class = d->qos_class;
      // The active side's traffic class arrives in the REQ and both directions follow it, as
      // the kernel does: the passive side's own match sets SL, MTU and rate only.
      d->traffic_class.reset();
      ids.set_decision(id, *d);
    }
  }
  if (d) providers::QpRegistry::instance().set_decision(id->qp, rdmacm::to_qos_decision(*d));
  if (is_ud(id)) register_ud_peer(id, d, cm);
  record_decision(c, passive ? "rdma_accept" : "rdma_connect", d, sid, qos_class, std::nullopt, &cm,
                  received_tclass);
}

// The active side on ESTABLISHED, the passive side when its CONNECT_REQUEST carries an address:
// the program's ibv_create_ah then carries the decision.
void on_ud_event(rdma_cm_event* ev) {
  rdma_cm_id* id = ev->id;
  if (id == nullptr || !is_ud(id)) return;
  // Whatever the link: the program's address handles on this PD come from rdma_cm, not plain
  // verbs (on InfiniBand they carry the SA's path already).
  if (ibv_pd* pd = id->pd != nullptr ? id->pd : id->qp != nullptr ? id->qp->pd : nullptr)
    providers::QpRegistry::instance().mark_rdma_cm_pd(pd);
  if (!is_ethernet(id)) return;
  bool passive = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
  if (ev->event != RDMA_CM_EVENT_ESTABLISHED && !passive) return;
  ibv_ah_attr& ah = ev->param.ud.ah_attr;
  if (passive && !ah.is_global) return;  // no address in the request
  const CmConfig& c = cm_config();
  auto& ids = IdRegistry::instance();
  providers::CmConnection cm =
      rdmacm::cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, passive);
  IdState st = ids.get(id);
  std::optional<CmDecision> d = st.decision;
  uint64_t sid = rdmacm::effective_service_id(id->ps, cm.dport, st.inputs, c.settings);
  if (passive) {
    cm.application_label = rdmacm::passive_application_label(ah.grh.flow_label, cm.dport, cm.sport);
    d = rdmacm::decide_roce_passive(sid, ah.grh.traffic_class, id_pkey(id), c.settings);
    if (d) {
      d->traffic_class.reset();  // the active side's traffic class is kept, as for connections
      ids.set_decision(id, *d);
    }
  }
  bool changed =
      rdmacm::apply_ud_decision(ah, d, cm, c.flow_label, is_roce_v2(id, ah.grh.sgid_index));
  if (c.record_path.empty()) return;
  append_record(c.record_path, Record{{"call", "rdma_get_cm_event"},
                                      {"event", passive ? "connect_request" : "established"},
                                      {"service_id", d ? d->service_id : sid},
                                      {"level", d ? d->level : ""},
                                      {"sl", ah.sl},
                                      {"traffic_class", ah.grh.traffic_class},
                                      {"flow_label", ah.grh.flow_label},
                                      {"static_rate", ah.static_rate},
                                      {"cm_dport", cm.dport},
                                      {"cm_sport", cm.sport},
                                      {"changed", changed}});
}

}  // namespace rdmaqos::preload
