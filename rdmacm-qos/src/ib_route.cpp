// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA with Service-ID and QoS-Class: the query, the
// installed record and the decision it gives (see ib_route.h).
#include "rdma-qos/rdmacm-qos/ib_route.h"

#include <cstring>

namespace rdmaqos::rdmacm {

sa::Gid gid_of(const ibv_gid& gid) {
  sa::Gid out{};
  std::memcpy(out.data(), gid.raw, out.size());
  return out;
}

sa::PathQuery build_path_query(const IbRouteInputs& in, bool sa_advertises_qos) {
  namespace m = sa::pr_mask;
  sa::PathQuery q;
  q.record.service_id = in.service_id;
  q.record.sgid = in.sgid;
  q.record.dgid = in.dgid;
  q.record.pkey = in.pkey;
  q.record.reversible = true;
  q.record.numb_path = 1;
  q.comp_mask = m::kServiceId | m::kDgid | m::kSgid | m::kPKey | m::kReversible | m::kNumbPath;
  // An SA without QoS support may reject or ignore the field: send it only when advertised.
  if (in.qos_class && sa_advertises_qos) {
    q.record.qos_class = static_cast<uint16_t>(*in.qos_class & 0xFFF);
    q.comp_mask |= m::kQosClass;
  }
  if (in.tclass) {
    q.record.tclass = *in.tclass;
    q.comp_mask |= m::kTClass;
  }
  return q;
}

std::optional<ibv_path_data> path_data(const sa::PathRecord& answer) {
  auto bytes = sa::encode_path_record(answer);
  if (!bytes) return std::nullopt;
  ibv_path_data d{};
  d.flags = kInstalledPathFlags;
  static_assert(sizeof d.path == sa::kPathRecordSize);
  std::memcpy(&d.path, bytes->data(), sizeof d.path);
  return d;
}

CmDecision decision_from_path(const sa::PathRecord& answer, uint64_t service_id,
                              std::optional<uint16_t> qos_class) {
  CmDecision d;
  d.service_id = service_id;
  d.qos_class = qos_class;
  d.sl = answer.sl;
  d.mtu_limit = answer.mtu;
  d.rate_limit = answer.rate;
  return d;
}

}  // namespace rdmaqos::rdmacm
