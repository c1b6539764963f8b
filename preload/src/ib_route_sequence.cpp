// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand route sequence over its host (see ib_route_sequence.h).
#include "ib_route_sequence.h"

namespace rdmaqos::preload {

IbRouteResult resolve_ib_route(const rdmacm::IbRouteInputs& in, bool synchronous_id,
                               IbRouteHost& host, bool multipath) {
  IbRouteResult r;
  auto qos = host.sa_qos_supported();
  if (!qos) {
    r.why = "the SA cannot be asked for its capabilities";
    return r;
  }
  sa::PathQuery q = rdmacm::build_path_query(in, *qos);
  std::optional<rdmacm::PathAnswer> answer;
  if (multipath) {
    auto mpr = host.sa_mpr_supported();
    if (mpr && *mpr) {
      answer = host.multipath_records(q);
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
  if (!answer) answer = host.path_records(q);
  if (!*answer) {
    r.why = "the SA path query failed";
    return r;
  }
  if ((*answer)->empty()) {
    r.why = "the SA has no path for this Service-ID and QoS-Class";
    return r;
  }
  const sa::PathRecord& path = (*answer)->front();
  auto data = rdmacm::path_data(path);
  if (!data) {
    r.why = "the SA's answer cannot be encoded for the kernel";
    return r;
  }
  if (host.set_path(*data, path) != 0) {
    r.why = "rdma_set_option(RDMA_OPTION_IB_PATH) refused the path";
    return r;
  }
  r.installed = true;
  r.path = path;
  // The kernel raised ROUTE_RESOLVED itself; a synchronous id has no program reading events,
  // so the event would be seen by the next librdmacm call on the id.
  if (synchronous_id && host.consume_route_resolved() != 0)
    r.why = "the ROUTE_RESOLVED event of a synchronous id could not be consumed";
  return r;
}

}  // namespace rdmaqos::preload
