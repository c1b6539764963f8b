// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The path queries OpenSM's own handler answers (see opensm_decides.h).
#include "opensm_decides.h"

#include <algorithm>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::osmp {
namespace {

using Fallback = Engine::Fallback;

// OpenSM counts a port with an empty P_Key table as sharing every partition: while the model
// has one, unicast path queries are OpenSM's.
std::optional<Fallback> empty_pkey_tables(const sad::FabricModel& model) {
  if (model.endpoints_without_pkeys != 0) return Fallback::kNoPkeyTable;
  return std::nullopt;
}

// Whether `port` is one of `guids` (sorted); an open end (nullopt) may be any port, so it counts
// as one while `guids` is not empty.
bool may_be_one_of(const std::vector<uint64_t>& guids, const sad::FabricModel& model,
                   std::optional<sad::Endpoint> port) {
  if (guids.empty()) return false;
  return !port || std::binary_search(guids.begin(), guids.end(), model.port(*port).guid);
}

bool may_be_aliased(const sad::FabricModel& model, std::optional<sad::Endpoint> port) {
  return may_be_one_of(model.ports_with_aliases, model, port);
}

// OpenSM answers for a port that is not Active as for an Active one, through links of any
// state; the model has no P_Keys or link for it. A path query that may end at such a port, or
// any path query while a link between switches is not Active, is OpenSM's.
std::optional<Fallback> not_active(const sad::FabricModel& model,
                                   std::optional<sad::Endpoint> source,
                                   std::optional<sad::Endpoint> destination) {
  if (model.inactive_switch_ports != 0 || may_be_one_of(model.inactive_endpoints, model, source) ||
      may_be_one_of(model.inactive_endpoints, model, destination))
    return Fallback::kInactivePort;
  return std::nullopt;
}

std::optional<Fallback> path_record(const sa::SaMad& mad, const sad::DecodedQuery& decoded,
                                    const Snapshot& now, const sad::AnswerContext& ctx) {
  const sad::FabricModel& model = *now.model;
  const std::optional<sa::PathRecord>& r = decoded.path;
  if (!r) return empty_pkey_tables(model);
  namespace pm = sa::pr_mask;
  const uint64_t m = mad.sa.comp_mask;
  if ((m & pm::kDgid) != 0 && r->dgid[0] == 0xFF) {
    // A group: OpenSM answers from its live groups (their members, flow label and hop limit
    // included), except where our rule shows the group only to its partition's members: that
    // refusal stays ours.
    const sad::MulticastGroup* g =
        now.groups != nullptr ? sad::find_group(*now.groups, r->dgid) : nullptr;
    if (g == nullptr || !ctx.requester || sad::may_see_group(model.port(*ctx.requester).pkeys, *g))
      return Fallback::kMulticast;
    return std::nullopt;
  }
  if (((m & pm::kSgid) != 0 && sad::names_unknown_local_port(model, r->sgid)) ||
      ((m & pm::kDgid) != 0 && sad::names_unknown_local_port(model, r->dgid)))
    return Fallback::kUnknownPort;
  // The ends the query names (a GID before a LID, as OpenSM takes them); nullopt: open.
  auto end = [&model](bool by_gid, const sa::Gid& gid, bool by_lid, uint16_t lid) {
    return by_gid ? model.by_guid(sa::gid_guid(gid)) : by_lid ? model.by_lid(lid) : std::nullopt;
  };
  const auto source = end(m & pm::kSgid, r->sgid, m & pm::kSlid, r->slid);
  const auto destination = end(m & pm::kDgid, r->dgid, m & pm::kDlid, r->dlid);
  if (auto why = not_active(model, source, destination)) return why;
  // OpenSM may put a port's alias in the record's SGID or DGID even for a query by LID.
  if (may_be_aliased(model, source) || may_be_aliased(model, destination))
    return Fallback::kAliasedPort;
  return empty_pkey_tables(model);
}

std::optional<Fallback> multipath_record(const sad::DecodedQuery& decoded, const Snapshot& now) {
  const sad::FabricModel& model = *now.model;
  // OpenSM 3.3.23's MultiPathRecord handler does not ask the routing engine for the SL (its
  // PathRecord handler does): where the engine assigns SLs, OpenSM's own answer stands.
  if (model.routing.assigns_sl) return Fallback::kMultiPathRoutingSl;
  const std::optional<sa::MultiPathRecord>& r = decoded.multipath;
  if (!r) return empty_pkey_tables(model);
  auto unknown = [&model](const sa::Gid& g) { return sad::names_unknown_local_port(model, g); };
  if (std::any_of(r->sgids.begin(), r->sgids.end(), unknown) ||
      std::any_of(r->dgids.begin(), r->dgids.end(), unknown))
    return Fallback::kUnknownPort;
  // A GID the model lacks names no port (another subnet's): it is no open end.
  auto inactive = [&model](const sa::Gid& g) {
    auto port = model.by_guid(sa::gid_guid(g));
    return port && may_be_one_of(model.inactive_endpoints, model, port);
  };
  if (model.inactive_switch_ports != 0 ||
      (!model.inactive_endpoints.empty() && (r->sgids.empty() || r->dgids.empty())) ||
      std::any_of(r->sgids.begin(), r->sgids.end(), inactive) ||
      std::any_of(r->dgids.begin(), r->dgids.end(), inactive))
    return Fallback::kInactivePort;
  auto aliased = [&model](const sa::Gid& g) {
    auto port = model.by_guid(sa::gid_guid(g));
    return port && may_be_aliased(model, port);
  };
  if (std::any_of(r->sgids.begin(), r->sgids.end(), aliased) ||
      std::any_of(r->dgids.begin(), r->dgids.end(), aliased))
    return Fallback::kAliasedPort;
  return empty_pkey_tables(model);
}

}  // namespace

std::optional<Fallback> opensm_decides(const sa::SaMad& mad, const sad::DecodedQuery& decoded,
                                       const Snapshot& now, const sad::AnswerContext& ctx) {
  if (mad.mad.attr_id == sa::attr::kPathRecord) return path_record(mad, decoded, now, ctx);
  if (mad.mad.attr_id == sa::attr::kMultiPathRecord) return multipath_record(decoded, now);
  return std::nullopt;
}

}  // namespace rdmaqos::osmp
