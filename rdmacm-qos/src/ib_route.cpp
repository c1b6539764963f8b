// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA with Service-ID and QoS-Class (see ib_route.h).
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

IbRouteResult resolve_ib_route(const IbRouteInputs& in, bool synchronous_id, const IbRouteOps& ops,
                               bool multipath) {
  IbRouteResult r;
  auto qos =
      ops.sa_qos_supported
          ? ops.sa_qos_supported()
          : rdmaqos::Result<bool>(rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "no SA"));
  if (!qos) {
    r.why = "the SA cannot be asked for its capabilities";
    return r;
  }
  sa::PathQuery q = build_path_query(in, *qos);
  std::optional<PathAnswer> answer;
  if (multipath) {
    auto mpr =
        ops.sa_mpr_supported
            ? ops.sa_mpr_supported()
            : rdmaqos::Result<bool>(rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "no SA"));
    if (mpr && *mpr && ops.multipath_query) {
      answer = ops.multipath_query(q);
      r.multipath = *answer && !(*answer)->empty();
      if (!r.multipath) {
        r.note = "the SA gave no MultiPathRecord answer; PathRecord asked instead";
        answer.reset();
      }
    } else {
      r.note = mpr ? "the SA does not advertise MultiPathRecord; PathRecord used"
                   : "the SA's MultiPathRecord support is unknown; PathRecord used";
    }
  }
  if (!answer) answer = ops.path_query(q);
  if (!*answer) {
    r.why = "the SA path query failed";
    return r;
  }
  if ((*answer)->empty()) {
    r.why = "the SA has no path for this Service-ID and QoS-Class";
    return r;
  }
  const sa::PathRecord& path = (*answer)->front();
  auto data = path_data(path);
  if (!data) {
    r.why = "the SA's answer cannot be encoded for the kernel";
    return r;
  }
  if (ops.set_path(&*data, sizeof *data) != 0) {
    r.why = "rdma_set_option(RDMA_OPTION_IB_PATH) refused the path";
    return r;
  }
  r.installed = true;
  r.path = path;
  // The kernel raised ROUTE_RESOLVED itself; a synchronous id has no program reading events,
  // so the event would be seen by the next librdmacm call on the id.
  if (synchronous_id && ops.consume_route_resolved && ops.consume_route_resolved() != 0)
    r.why = "the ROUTE_RESOLVED event of a synchronous id could not be consumed";
  return r;
}

}  // namespace rdmaqos::rdmacm
