// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE, where there is no SA: the host policy decides at connection setup (TOS before route
// resolution, the QP's decision for the verbs layer on both sides, UD address handles).
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cm_layer.h"
#include "config.h"
#include "log.h"
#include "rdma-qos/providers/qp_registry.h"
#include "real_calls.h"
#include "rsockets.h"
#include "test_record.h"
#include "ud_peers.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::CmDecision;
using rdmacm::IdInputs;
using rdmacm::IdRegistry;
using rdmacm::IdState;

bool is_roce_v2(rdma_cm_id* id, uint8_t sgid_index) {
  if (!is_ethernet(id)) return false;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(id->verbs, id->port_num, sgid_index, &entry, 0) != 0) return false;
  return entry.gid_type == IBV_GID_TYPE_ROCE_V2;
}

// The cm_tag knob: on unless set to 0 (then the module neither adds nor reads a tag).
bool tags_enabled() {
  static const bool on = [] {
    const config::HostConfig* c = preload_config();
    return c == nullptr || c->text("cm_tag") != "0";
  }();
  return on;
}

// An id whose connection request carries the private data area the tag is laid out for: RoCE
// (an IB transport: an iWARP device's link is Ethernet too, but its MPA private data has the
// length the program gave), a connected QP type, and IP addresses (rdma_cm's 36-byte header
// before the program's bytes; AF_IB ids have none). `ethernet`: the caller knows the port's
// link is (one look-up fewer per connection).
bool taggable(rdma_cm_id* id, bool ethernet = false) {
  if (id->verbs == nullptr || id->verbs->device == nullptr ||
      id->verbs->device->transport_type != IBV_TRANSPORT_IB || is_ud(id))
    return false;
  const sa_family_t family = id->route.addr.src_addr.sa_family;
  return (family == AF_INET || family == AF_INET6) && (ethernet || is_ethernet(id));
}

// rdma_set_option(TOS) with the one byte the kernel takes; the program's TOS when it worked.
bool set_tos(rdma_cm_id* id, uint8_t byte) {
  auto set = real_rdmacm().set_option;
  return set != nullptr && set(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) == 0;
}

// What the program asked for outside rdma_set_option, given to the id as its TOS: rsockets'
// socket options (rsockets passes no TOS to its id itself) and, on IPv6, a traffic class in the
// destination's sin6_flowinfo unless the program set a TOS (the kernel itself would ignore
// it). Most connections have neither and take no registry step here.
void take_program_tos(rdma_cm_id* id) {
  const std::optional<uint8_t> flow_tclass =
      rdmacm::address_traffic_class(&id->route.addr.dst_addr);
  if (!connecting_socket && !flow_tclass) return;
  auto& ids = IdRegistry::instance();
  std::optional<uint8_t> program_tos = ids.get(id).inputs.program_tos;
  if (connecting_socket) {
    if (connecting_socket->tos && set_tos(id, *connecting_socket->tos)) {
      ids.set_program_tos(id, *connecting_socket->tos);
      program_tos = connecting_socket->tos;
    }
    if (connecting_socket->qos_class) ids.set_class(id, *connecting_socket->qos_class);
  }
  if (!program_tos && flow_tclass && set_tos(id, *flow_tclass))
    ids.set_program_tos(id, *flow_tclass);
}

}  // namespace

void before_resolve_route(rdma_cm_id* id) {
  const CmConfig& c = cm_config();
  take_program_tos(id);
  // One registry step: the id's inputs read and its decision stored under one lock (a
  // connection's match is a look-up in the settings' cache once its service was matched).
  IdInputs inputs;
  uint64_t sid = 0;
  std::optional<uint16_t> qos_class;
  std::optional<CmDecision> d;
  {
    auto st = IdRegistry::instance().lock(id);
    inputs = st->inputs;
    sid = rdmacm::effective_service_id(id->ps, &id->route.addr.dst_addr, inputs, c.settings);
    qos_class = rdmacm::effective_qos_class(inputs, c.settings);
    d = rdmacm::decide_roce(sid, qos_class, id_pkey(id), c.settings, inputs.program_tos);
    if (d) st->decision = *d;
  }
  auto tos = rdmacm::tos_to_set(d, inputs, c.settings);
  if (tos && !set_tos(id, *tos))
    log_once("set_tos", fmt::format("rdma_set_option(TOS {}) failed: {}; the connection keeps "
                                    "its TOS",
                                    *tos, strerror(errno)));
  record_decision(c, "rdma_resolve_route", d, sid, qos_class, tos, nullptr);
}

namespace {

// The active side's tag in `out`, from what it matched with (its route resolution's decision and
// the id's inputs) on connection `cm`; nullopt when the program's private data leaves no room or
// the id is not one to tag.
std::optional<rdmacm::CmTag> add_tag(rdma_cm_id* id, const CmConfig& c,
                                     const std::optional<CmDecision>& decision,
                                     const IdInputs& inputs, const providers::CmConnection& cm,
                                     const rdma_conn_param* param, ConnectTag& out) {
  // register_qp, the one caller, has found the port's link Ethernet.
  if (!tags_enabled() || !c.settings.policy || cm.dport == 0 || cm.sport == 0 ||
      !taggable(id, true))
    return std::nullopt;
  const void* program_data = param != nullptr ? param->private_data : nullptr;
  const size_t program_len =
      param != nullptr && program_data != nullptr ? param->private_data_len : 0;
  const rdmacm::CmTag tag = rdmacm::tag_of(decision, inputs, c.settings);
  if (!rdmacm::add_cm_tag(program_data, program_len, tag, cm.dport, cm.sport, out.data))
    return std::nullopt;
  if (param != nullptr) {
    out.param = *param;
  } else {
    // What librdmacm uses for a call without parameters.
    out.param = rdma_conn_param{};
    out.param.responder_resources = RDMA_MAX_RESP_RES;
    out.param.initiator_depth = RDMA_MAX_INIT_DEPTH;
    out.param.retry_count = 7;
    out.param.rnr_retry_count = 7;
  }
  out.param.private_data = out.data.data();
  out.param.private_data_len = static_cast<uint8_t>(out.data.size());
  out.added = true;
  if (!c.record_path.empty())
    append_record(c.record_path,
                  Record{{"call", "rdma_connect_tag"},
                         {"qos_class", tag.qos_class ? Record(*tag.qos_class) : Record(nullptr)},
                         {"tclass", tag.tclass ? Record(*tag.tclass) : Record(nullptr)},
                         {"level_hash", tag.level_hash ? Record(*tag.level_hash) : Record(nullptr)},
                         {"program_bytes", program_len},
                         {"cm_dport", cm.dport},
                         {"cm_sport", cm.sport}});
  return tag;
}

}  // namespace

void register_qp(rdma_cm_id* id, bool passive, const rdma_conn_param* program_param,
                 ConnectTag* tag_out) {
  if (id->qp == nullptr) return;
  auto& qps = providers::QpRegistry::instance();
  if (!is_ethernet(id)) {
    // Whatever the link: the verbs layer must not take it for a plain-verbs QP (on InfiniBand
    // its path, and level, came from the SA's answer to the rdma_cm query, or the kernel's).
    qps.mark_rdma_cm(id->qp);
    return;
  }
  const CmConfig& c = cm_config();
  auto& ids = IdRegistry::instance();
  providers::CmConnection cm =
      rdmacm::cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, passive);
  // The passive side tells from the REQ's path record whether the active side's label was the
  // program's own.
  if (passive && id->route.path_rec != nullptr && id->route.num_paths > 0)
    cm.application_label = rdmacm::passive_application_label(
        ntohl(id->route.path_rec[0].flow_label), cm.dport, cm.sport);
  std::optional<uint8_t> received_tclass;
  // The REQ's path (the connection's path record) carries the active side's TOS.
  if (passive && id->route.path_rec != nullptr && id->route.num_paths > 0)
    received_tclass = id->route.path_rec[0].traffic_class;
  IdInputs inputs;
  std::optional<CmDecision> d;
  uint64_t sid = 0;
  std::optional<uint16_t> qos_class;
  std::optional<TagRecord> tag;
  {
    // One registry step: the active side reads the decision of its route resolution, the
    // passive side makes its own and stores it under the same lock.
    auto locked = ids.lock(id);
    // Only what this step reads is copied out of the entry.
    inputs = locked->inputs;
    d = locked->decision;
    // Without a decision (no policy) the record still names what was matched on.
    sid = d ? d->service_id : rdmacm::effective_service_id(id->ps, cm.dport, inputs, c.settings);
    qos_class = d ? d->qos_class : rdmacm::effective_qos_class(inputs, c.settings);
    if (passive) {
      if (inputs.class_override) {
        d = rdmacm::decide_roce(sid, qos_class, id_pkey(id), c.settings);
      } else if (const std::optional<rdmacm::CmTag>& peer_tag = locked->peer_tag) {
        // The active side's module said what it matched with: the same match, once.
        auto tagged =
            rdmacm::decide_roce_tagged(sid, *peer_tag, received_tclass, id_pkey(id), c.settings);
        d = std::move(tagged.decision);
        tag = TagRecord{*peer_tag, tagged.agrees};
      } else {
        d = rdmacm::decide_roce_passive(sid, received_tclass, id_pkey(id), c.settings);
      }
      if (d) {
        if (!inputs.class_override) qos_class = d->qos_class;
        // The active side's traffic class arrives in the REQ and both directions follow it, as
        // the kernel does: the passive side's own match sets SL, MTU and rate only.
        d->traffic_class.reset();
        locked->decision = *d;
      }
    }
  }
  if (tag && tag->agrees == false)
    log_once("tag_disagrees",
             "a connection's peer matched another level than this host does for the same "
             "QoS-Class and TOS (do both hosts have the same policy and roce_sl2tclass?); "
             "this host's level applies");
  // One registry update: an rdma_cm QP (never a plain-verbs one), its CM ports, its level.
  qps.register_rdma_cm(id->qp, cm.dport != 0 && cm.sport != 0 ? std::optional(cm) : std::nullopt,
                       d ? std::optional(rdmacm::to_qos_decision(*d)) : std::nullopt);
  if (is_ud(id)) register_ud_peer(id, d, cm);
  if (!passive && tag_out != nullptr)
    if (auto sent = add_tag(id, c, d, inputs, cm, program_param, *tag_out))
      tag = TagRecord{*sent, std::nullopt};
  record_decision(c, passive ? "rdma_accept" : "rdma_connect", d, sid, qos_class, std::nullopt, &cm,
                  received_tclass, tag ? &*tag : nullptr);
}

void take_connection_tag(rdma_cm_event* ev) {
  if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) return;
  rdma_cm_id* id = ev->id;
  rdma_conn_param& p = ev->param.conn;
  if (id == nullptr || p.private_data == nullptr || p.private_data_len < rdmacm::kCmTagSize ||
      !tags_enabled() || !taggable(id))
    return;
  providers::CmConnection cm =
      rdmacm::cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, true);
  // librdmacm's copy of the request, in the event it hands the program: ours to clean.
  auto* bytes = static_cast<uint8_t*>(const_cast<void*>(p.private_data));
  if (auto tag = rdmacm::take_cm_tag(bytes, p.private_data_len, cm.dport, cm.sport))
    IdRegistry::instance().set_peer_tag(id, *tag);
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
                                      {"level", d ? d->level : std::string_view()},
                                      {"sl", ah.sl},
                                      {"traffic_class", ah.grh.traffic_class},
                                      {"flow_label", ah.grh.flow_label},
                                      {"static_rate", ah.static_rate},
                                      {"cm_dport", cm.dport},
                                      {"cm_sport", cm.sport},
                                      {"changed", changed}});
}

}  // namespace rdmaqos::preload
