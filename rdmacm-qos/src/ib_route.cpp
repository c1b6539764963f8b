// InfiniBand route resolution through the SA with Service-ID and QoS-Class (see ib_route.h).
#include "rdma-qos/rdmacm-qos/ib_route.h"

#include <arpa/inet.h>
#include <endian.h>

namespace rdmaqos::rdmacm {
namespace {
// IBA 15.2.5.16 PathRecord component mask bits.
constexpr uint64_t kServiceId = 0x3, kDgid = 1 << 2, kSgid = 1 << 3, kTclass = 1 << 10,
                   kReversible = 1 << 11, kNumbPath = 1 << 12, kPkey = 1 << 13, kQosClass = 1 << 14;
}  // namespace

PathQuery build_path_query(const IbRouteInputs& in, bool sa_advertises_qos) {
  PathQuery q;
  q.record.service_id = htobe64(in.service_id);
  q.record.sgid = in.sgid;
  q.record.dgid = in.dgid;
  q.record.pkey = htons(in.pkey);
  q.record.reversible_numpath = 0x80 | 1;  // reversible, one path
  q.comp_mask = kServiceId | kDgid | kSgid | kPkey | kReversible | kNumbPath;
  // An SA without QoS support may reject or ignore the field: send it only when advertised.
  if (in.qos_class && sa_advertises_qos) {
    q.record.qosclass_sl = htons(static_cast<uint16_t>((*in.qos_class & 0xFFF) << 4));
    q.comp_mask |= kQosClass;
  }
  if (in.tclass) {
    q.record.tclass = *in.tclass;
    q.comp_mask |= kTclass;
  }
  return q;
}

ibv_path_data path_data(const ibv_path_record& answer) {
  ibv_path_data d{};
  d.flags = kInstalledPathFlags;
  d.path = answer;
  return d;
}

CmDecision decision_from_path(const ibv_path_record& answer, uint64_t service_id,
                              std::optional<uint16_t> qos_class) {
  CmDecision d;
  d.service_id = service_id;
  d.qos_class = qos_class;
  d.sl = static_cast<uint8_t>(ntohs(answer.qosclass_sl) & 0xF);
  d.mtu_limit = static_cast<uint8_t>(answer.mtu & 0x3F);    // below the 2-bit selector
  d.rate_limit = static_cast<uint8_t>(answer.rate & 0x3F);  // likewise
  return d;
}

IbRouteResult resolve_ib_route(const IbRouteInputs& in, bool synchronous_id, const IbRouteOps& ops,
                               bool multipath) {
  IbRouteResult r;
  int qos = ops.sa_qos_supported ? ops.sa_qos_supported() : -1;
  if (qos < 0) {
    r.why = "the SA cannot be asked for its capabilities";
    return r;
  }
  PathQuery q = build_path_query(in, qos == 1);
  ibv_path_record answer{};
  int n = -1;
  if (multipath) {
    int mpr = ops.sa_mpr_supported ? ops.sa_mpr_supported() : -1;
    if (mpr == 1 && ops.multipath_query) {
      n = ops.multipath_query(q, &answer);
      r.multipath = n > 0;
      if (n <= 0) r.note = "the SA gave no MultiPathRecord answer; PathRecord asked instead";
    } else {
      r.note = mpr == 0 ? "the SA does not advertise MultiPathRecord; PathRecord used"
                        : "the SA's MultiPathRecord support is unknown; PathRecord used";
    }
  }
  if (n <= 0) n = ops.path_query(q, &answer);
  if (n < 0) {
    r.why = "the SA path query failed";
    return r;
  }
  if (n == 0) {
    r.why = "the SA has no path for this Service-ID and QoS-Class";
    return r;
  }
  ibv_path_data data = path_data(answer);
  if (ops.set_path(&data, sizeof data) != 0) {
    r.why = "rdma_set_option(RDMA_OPTION_IB_PATH) refused the path";
    return r;
  }
  r.installed = true;
  r.path = answer;
  // The kernel raised ROUTE_RESOLVED itself; a synchronous id has no program reading events,
  // so the event would be seen by the next librdmacm call on the id.
  if (synchronous_id && ops.consume_route_resolved && ops.consume_route_resolved() != 0)
    r.why = "the ROUTE_RESOLVED event of a synchronous id could not be consumed";
  return r;
}

}  // namespace rdmaqos::rdmacm
