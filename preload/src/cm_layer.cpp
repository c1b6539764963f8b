// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the rdma_cm layer's steps share: the link layer of an id's port and the test hook's line.
#include "cm_layer.h"

#include <arpa/inet.h>

#include <string>

#include "ports.h"
#include "test_record.h"

namespace rdmaqos::preload {
namespace {

// A number, or null when absent.
Record opt(const auto& v) {
  return v ? Record(static_cast<unsigned>(*v)) : Record(nullptr);
}

}  // namespace

int link_layer(rdma_cm_id* id) {
  return port_link_layer(id->verbs, id->port_num);
}

bool is_ethernet(rdma_cm_id* id) {
  return port_link_layer(id->verbs, id->port_num) == IBV_LINK_LAYER_ETHERNET;
}

uint16_t id_pkey(rdma_cm_id* id) {
  uint16_t pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  return pkey != 0 ? pkey : 0xFFFF;
}

void record_decision(const CmConfig& c, const char* call,
                     const std::optional<rdmacm::CmDecision>& d, uint64_t sid,
                     std::optional<uint16_t> qos_class, std::optional<uint8_t> tos_set,
                     const providers::CmConnection* cm, std::optional<uint8_t> received_tclass,
                     const TagRecord* tag) {
  if (c.record_path.empty()) return;
  Record peer_tag = nullptr;
  if (tag != nullptr) {
    peer_tag = Record{
        {"qos_class", opt(tag->tag.qos_class)},
        {"tclass", opt(tag->tag.tclass)},
        {"level_hash", tag->tag.level_hash ? Record(*tag->tag.level_hash) : Record(nullptr)}};
    if (tag->agrees) peer_tag["agrees"] = *tag->agrees;
  }
  append_record(c.record_path,
                Record{{"call", call},
                       {"service_id", sid},
                       {"qos_class", opt(qos_class)},
                       {"level", d ? d->level : std::string_view()},
                       {"sl", d ? Record(d->sl) : Record(nullptr)},
                       {"traffic_class", d ? opt(d->traffic_class) : Record(nullptr)},
                       {"mtu_limit", d ? opt(d->mtu_limit) : Record(nullptr)},
                       {"rate_limit", d ? opt(d->rate_limit) : Record(nullptr)},
                       {"tos_set", opt(tos_set)},
                       {"received_tclass", opt(received_tclass)},
                       {"tag", peer_tag},
                       {"cm_dport", cm ? Record(cm->dport) : Record(nullptr)},
                       {"cm_sport", cm ? Record(cm->sport) : Record(nullptr)}});
}

}  // namespace rdmaqos::preload
