// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand route sequence over its host (see ib_route_sequence.h).
#include "ib_route_sequence.h"

#include <string>
#include <utility>

namespace rdmaqos::preload {

namespace {

// `why` in the words of the sequence, with the code (and MAD status) of the call that failed.
rdmaqos::Error because(const rdmaqos::Error& cause, std::string why) {
  return rdmaqos::make_error(cause.code, std::move(why), cause.mad_status);
}

}  // namespace

IbRouteResult resolve_ib_route(const rdmacm::IbRouteInputs& in, bool synchronous_id,
                               IbRouteHost& host, bool multipath) {
  bool used_multipath = false;
  std::optional<rdmaqos::Error> multipath_unused;
  auto fall_back = [&](rdmaqos::Error why) {
    return IbRouteResult{std::move(why), false, std::move(multipath_unused), std::nullopt};
  };
  auto qos = host.sa_qos_supported();
  if (!qos) return fall_back(because(qos.error(), "the SA cannot be asked for its capabilities"));
  sa::PathQuery q = rdmacm::build_path_query(in, *qos);
  std::optional<rdmacm::PathAnswer> answer;
  if (multipath) {
    auto mpr = host.sa_mpr_supported();
    if (mpr && *mpr) {
      answer = host.multipath_records(q);
      used_multipath = *answer && !(*answer)->empty();
      if (!used_multipath) {
        multipath_unused =
            *answer ? rdmaqos::make_error(
                          rdmaqos::ErrorCode::kInvalidArgument,
                          "the SA gave no MultiPathRecord answer; PathRecord asked instead")
                    : because((*answer).error(),
                              "the SA gave no MultiPathRecord answer; PathRecord asked instead");
        answer.reset();
      }
    } else if (mpr) {
      multipath_unused =
          rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                              "the SA does not advertise MultiPathRecord; PathRecord used");
    } else {
      multipath_unused =
          because(mpr.error(), "the SA's MultiPathRecord support is unknown; PathRecord used");
    }
  }
  if (!answer) answer = host.path_records(q);
  if (!*answer) return fall_back(because((*answer).error(), "the SA path query failed"));
  if ((*answer)->empty())
    return fall_back(rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                                         "the SA has no path for this Service-ID and QoS-Class"));
  const sa::PathRecord& path = (*answer)->front();
  auto data = rdmacm::path_data(path);
  if (!data)
    return fall_back(rdmaqos::make_error(rdmaqos::ErrorCode::kMalformed,
                                         "the SA's answer cannot be encoded for the kernel"));
  if (host.set_path(*data, path) != 0)
    return fall_back(rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                                         "rdma_set_option(RDMA_OPTION_IB_PATH) refused the path"));
  IbRouteResult r{path, used_multipath, std::move(multipath_unused), std::nullopt};
  // The kernel raised ROUTE_RESOLVED itself; a synchronous id has no program reading events,
  // so the event would be seen by the next librdmacm call on the id.
  if (synchronous_id && host.consume_route_resolved() != 0)
    r.event_unconsumed =
        rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                            "the ROUTE_RESOLVED event of a synchronous id could not be consumed");
  return r;
}

}  // namespace rdmaqos::preload
