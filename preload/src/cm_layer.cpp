// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the rdma_cm layer's steps share: the link layer of an id's port and the test hook's line.
#include "cm_layer.h"

#include <arpa/inet.h>

#include <string>

#include <fmt/format.h>

#include "ports.h"
#include "test_record.h"

namespace rdmaqos::preload {
namespace {

std::string opt(const auto& v) {
  return v ? fmt::format("{}", static_cast<unsigned>(*v)) : "null";
}

}  // namespace

bool is_ethernet(rdma_cm_id* id) {
  return port_link_layer(id->verbs, id->port_num) == IBV_LINK_LAYER_ETHERNET;
}

bool is_infiniband(rdma_cm_id* id) {
  return port_link_layer(id->verbs, id->port_num) == IBV_LINK_LAYER_INFINIBAND;
}

uint16_t id_pkey(rdma_cm_id* id) {
  uint16_t pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  return pkey != 0 ? pkey : 0xFFFF;
}

void record_decision(const CmConfig& c, const char* call,
                     const std::optional<rdmacm::CmDecision>& d, uint64_t sid,
                     std::optional<uint16_t> qos_class, std::optional<uint8_t> tos_set,
                     const providers::CmConnection* cm, std::optional<uint8_t> received_tclass) {
  if (c.record_path.empty()) return;
  std::string line = fmt::format(
      R"({{"call":"{}","service_id":{},"qos_class":{},"level":"{}","sl":{},"traffic_class":{},)"
      R"("mtu_limit":{},"rate_limit":{},"tos_set":{},"received_tclass":{},"cm_dport":{},)"
      R"("cm_sport":{}}})",
      call, sid, opt(qos_class), d ? d->level : "", d ? fmt::format("{}", d->sl) : "null",
      d ? opt(d->traffic_class) : "null", d ? opt(d->mtu_limit) : "null",
      d ? opt(d->rate_limit) : "null", opt(tos_set), opt(received_tclass),
      cm ? fmt::format("{}", cm->dport) : "null", cm ? fmt::format("{}", cm->sport) : "null");
  append_record(c.record_path, line);
}

}  // namespace rdmaqos::preload
