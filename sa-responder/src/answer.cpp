// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PathRecord / MultiPathRecord / ClassPortInfo answers with OpenSM's QoS semantics
// (Documentation/opensm-semantics.md): level limits, selectors, PKey and SL choice,
// reverse-direction check and the MAD status of each bad request.
#include "rdma-qos/sa-responder/answer.h"

#include <endian.h>

#include <algorithm>
#include <bit>
#include <span>

#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-responder/path_bits.h"

#include "answer_detail.h"

namespace rdmaqos::sad {
// Helpers the MultiPathRecord answers (answer_multipath.cpp) share: answer_detail.h.
namespace detail {

namespace pr = sa::pr_mask;

bool has(uint64_t mask, uint64_t bits) {
  return (mask & bits) == bits;
}

// The byte-swapped order OpenSM walks PKey maps in (keyed by the network-order value).
uint16_t swapped(uint16_t pkey) {
  uint16_t base = pkey & 0x7FFF;
  return static_cast<uint16_t>((base & 0xFF) << 8 | base >> 8);
}

// osm_physp_find_common_pkey: the source's entry for the first shared PKey in swapped order.
std::optional<uint16_t> common_pkey(const PortModel& src, const PortModel& dst) {
  std::optional<uint16_t> best;
  for (uint16_t entry : src.pkeys) {
    if ((entry & 0x7FFF) == 0 || !share_this_pkey(src, dst, entry)) continue;
    if (!best || swapped(entry) < swapped(*best)) best = entry;
  }
  return best;
}

// The lowest PKey of the level's ranges both ends share (osm_qos_level_get_shared_pkey).
std::optional<uint16_t> level_shared_pkey(const policy::Level& level, const PortModel& src,
                                          const PortModel& dst) {
  std::optional<uint16_t> best;
  for (uint16_t entry : src.pkeys) {
    uint16_t base = entry & 0x7FFF;
    if (base == 0 || !policy::ranges_contain(level.pkeys, base)) continue;
    if (!share_this_pkey(src, dst, base)) continue;
    if (!best || base < *best) best = base;
  }
  return best;
}

uint8_t partition_sl(const AnswerContext& ctx, uint16_t pkey) {
  if (ctx.partitions == nullptr) return 0;
  for (const policy::Partition& p : *ctx.partitions) {
    if ((p.pkey & 0x7FFF) == (pkey & 0x7FFF)) return p.sl.value_or(0);
  }
  return 0;
}

policy::PathQuery match_query(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                              Endpoint destination) {
  policy::PathQuery q;
  q.component_mask = request.comp_mask;
  q.service_id = request.record.service_id;
  q.qos_class = request.record.qos_class;
  q.pkey = request.record.pkey;
  // The policy's tclass rules (an rdma-qos extension) see the TClass only when the requester
  // names one; OpenSM's syntax has no such rule, so OpenSM-compatible policies are unaffected.
  if (request.comp_mask & pr::kTClass) q.tclass = request.record.tclass;
  q.source_guid = ctx.fabric->port(source).guid;
  q.source_type = ctx.fabric->nodes.at(static_cast<size_t>(source.node)).type;
  q.destination_guid = ctx.fabric->port(destination).guid;
  q.destination_type = ctx.fabric->nodes.at(static_cast<size_t>(destination.node)).type;
  return q;
}

struct Direction {
  sa::PathRecord record;
  Rejection rejection = Rejection::kNone;
  const policy::Level* level = nullptr;
  int links = 0;  // links the path crosses
};

// pr_rcv_get_path_parms for one direction, from `slid` (in the source's LID range) to `dlid`
// (in the destination's). `matched`: the direction's level when the caller has it (nullopt:
// matched here).
Direction path_parms(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                     Endpoint destination, uint16_t slid, uint16_t dlid,
                     std::optional<const policy::Level*> matched) {
  Direction d;
  const FabricModel& fabric = *ctx.fabric;
  const PortModel& src = fabric.port(source);
  const PortModel& dst = fabric.port(destination);
  auto fail = [&d](Rejection r) {
    d.rejection = r;
    return d;
  };
  auto walk = fabric.walk(source, dlid);
  if (!walk) return fail(Rejection::kNoRoute);
  d.links = walk->links;
  uint8_t mtu = walk->mtu;
  uint8_t rate = walk->rate;
  const uint64_t mask = request.comp_mask;
  const sa::PathRecord& req = request.record;

  if (matched) {
    d.level = *matched;
  } else if (ctx.policy != nullptr) {
    d.level = ctx.policy->match(match_query(ctx, request, source, destination)).level;
  }
  const policy::Level* level = d.level;
  if (level != nullptr) {
    if (level->mtu_limit) mtu = std::min(mtu, *level->mtu_limit);
    if (level->rate_limit && compare_rates(*level->rate_limit, rate) < 0) {
      rate = *level->rate_limit;
    }
    if ((walk->valid_sls & (1u << level->sl)) == 0) return fail(Rejection::kLevelSlDropped);
  }

  const bool loopback = source == destination;
  uint8_t life =
      loopback ? 0 : (level && level->packet_life ? *level->packet_life : fabric.subnet_timeout);

  // Selectors on MTU and packet life share OpenSM's rules; rate compares by data rate.
  auto apply_selector = [](sa::Selector sel, uint8_t requested, uint8_t& value) {
    switch (sel) {
      case sa::Selector::kGreaterThan: return value > requested;
      case sa::Selector::kLessThan:
        if (value >= requested) {
          if (requested <= 1) return false;
          value = static_cast<uint8_t>(requested - 1);
        }
        return true;
      case sa::Selector::kExactly:
        if (value < requested) return false;
        value = requested;
        return true;
      case sa::Selector::kBest: return true;
    }
    return true;
  };
  if (has(mask, pr::kMtu | pr::kMtuSelector) && !apply_selector(req.mtu_selector, req.mtu, mtu)) {
    return fail(Rejection::kSelector);
  }
  if (has(mask, pr::kRate | pr::kRateSelector)) {
    switch (req.rate_selector) {
      case sa::Selector::kGreaterThan:
        if (compare_rates(rate, req.rate) <= 0) return fail(Rejection::kSelector);
        break;
      case sa::Selector::kLessThan:
        if (compare_rates(rate, req.rate) >= 0) {
          auto slower = slower_rate(req.rate);
          if (!slower) return fail(Rejection::kSelector);
          rate = *slower;
        }
        break;
      case sa::Selector::kExactly:
        if (compare_rates(rate, req.rate) != 0) return fail(Rejection::kSelector);
        break;
      case sa::Selector::kBest: break;
    }
  }
  if (has(mask, pr::kPacketLife | pr::kPacketLifeSelector) &&
      !apply_selector(req.packet_life_selector, req.packet_life, life)) {
    return fail(Rejection::kSelector);
  }

  // PKey. Raw traffic takes any shared PKey, none included, whatever the request or the level
  // names (the record then carries PKey 0).
  const bool raw = has(mask, pr::kRawTraffic) && req.raw_traffic;
  uint16_t pkey = 0;
  if (raw) {
    pkey = common_pkey(src, dst).value_or(0);
  } else if (has(mask, pr::kPKey)) {
    if (!share_this_pkey(src, dst, req.pkey)) return fail(Rejection::kPkeyNotShared);
    if (level != nullptr && !level->pkeys.empty() &&
        !policy::ranges_contain(level->pkeys, req.pkey & 0x7FFF)) {
      return fail(Rejection::kPkeyNotInLevel);
    }
    pkey = req.pkey;
  } else if (level != nullptr && !level->pkeys.empty()) {
    auto shared = level_shared_pkey(*level, src, dst);
    if (!shared) return fail(Rejection::kLevelPkeyNotShared);
    pkey = *shared;
  } else {
    auto common = common_pkey(src, dst);
    if (!common) return fail(Rejection::kNoCommonPkey);
    pkey = *common;
  }

  // SL.
  uint8_t sl = 0;
  if (has(mask, pr::kSl)) {
    if (level != nullptr && req.sl != level->sl) return fail(Rejection::kSlNotLevel);
    sl = req.sl;
  } else if (level != nullptr) {
    sl = level->sl;
  } else if (pkey != 0) {
    sl = partition_sl(ctx, pkey);
  } else {
    // No PKey (raw traffic between ports that share none): the default SL 0, or the lowest
    // usable one.
    sl = (walk->valid_sls & 1u) != 0 ? 0 : static_cast<uint8_t>(std::countr_zero(walk->valid_sls));
  }
  if ((walk->valid_sls & (1u << sl)) == 0) return fail(Rejection::kSlDropped);
  // The routing engine has the last word where it assigns SLs: its SL is the path's layer.
  if (ctx.routing != nullptr) {
    sl = ctx.routing->path_sl(sl, slid, dlid);
    if (has(mask, pr::kSl) && req.sl != sl) return fail(Rejection::kSlNotRouting);
  }

  sa::PathRecord& out = d.record;
  out.sgid = sa::make_gid(fabric.subnet_prefix, src.guid);
  out.dgid = sa::make_gid(fabric.subnet_prefix, dst.guid);
  out.slid = slid;
  out.dlid = dlid;
  out.pkey = raw ? 0 : pkey;
  out.sl = sl;
  out.mtu_selector = sa::Selector::kExactly;
  out.mtu = mtu;
  out.rate_selector = sa::Selector::kExactly;
  out.rate = rate;
  out.packet_life_selector = sa::Selector::kExactly;
  out.packet_life = life;
  return d;
}

// The request's ports: SGID and SLID (or DGID and DLID) must agree when both are given.
// nullopt endpoint: the request names none (every port).
struct Ends {
  uint16_t status = 0;   // REQ_INVALID when GID and LID disagree
  bool unknown = false;  // a named port that does not exist
  std::optional<Endpoint> source, destination;
};

// A link-local GID (fe80::/10) names a port of this subnet by its GUID whatever its prefix;
// another GID must carry the subnet's prefix. OpenSM looks for a router towards any other
// prefix; with none (ibsim has no routers) the port is unknown.
bool names_local_port(const FabricModel& fabric, const sa::Gid& gid) {
  const uint64_t prefix = sa::gid_prefix(gid);
  return (prefix & 0xFFC0000000000000ULL) == 0xFE80000000000000ULL ||
         prefix == fabric.subnet_prefix;
}

}  // namespace detail

bool names_unknown_local_port(const FabricModel& fabric, const sa::Gid& gid) {
  return gid[0] != 0xFF && detail::names_local_port(fabric, gid) &&
         !fabric.by_guid(sa::gid_guid(gid));
}

namespace detail {

Ends end_points(const FabricModel& fabric, const PathRequest& request) {
  Ends ends;
  auto resolve = [&](bool by_gid, const sa::Gid& gid, bool by_lid, uint16_t lid,
                     std::optional<Endpoint>& out) {
    std::optional<Endpoint> g, l;
    if (by_gid) {
      if (names_local_port(fabric, gid)) g = fabric.by_guid(sa::gid_guid(gid));
      if (!g) ends.unknown = true;
    }
    if (by_lid) {
      l = fabric.by_lid(lid);
      if (!l) ends.unknown = true;
    }
    if (g && l && *g != *l) ends.status = mad_status::sa(sa::status::kReqInvalid);
    out = g ? g : l;
  };
  const uint64_t m = request.comp_mask;
  resolve(has(m, pr::kSgid), request.record.sgid, has(m, pr::kSlid), request.record.slid,
          ends.source);
  resolve(has(m, pr::kDgid), request.record.dgid, has(m, pr::kDlid), request.record.dlid,
          ends.destination);
  return ends;
}

// osm_port_share_pkey: a port shares a partition with itself whatever its membership (a
// limited member everywhere still gets its own paths to full members), two ports when both
// hold a P_Key and one of them as a full member.
bool share_partition(const FabricModel& f, Endpoint a, Endpoint b) {
  return a == b || share_any_pkey(f.port(a), f.port(b));
}

bool requester_allowed(const AnswerContext& ctx, Endpoint source, Endpoint destination) {
  if (!ctx.requester) return true;
  const FabricModel& f = *ctx.fabric;
  return share_partition(f, *ctx.requester, source) &&
         share_partition(f, *ctx.requester, destination) && share_partition(f, source, destination);
}

sa::SaMad response_to(const sa::SaMad& request, uint8_t method, uint16_t status) {
  sa::SaMad resp;
  resp.mad = request.mad;
  resp.mad.method = method;
  resp.mad.status = status;
  resp.sa = request.sa;
  resp.sa.attr_offset = 0;
  return resp;
}

// AttributeOffset of an answer of PathRecords, as OpenSM gives it (seen on ibsim): a record's
// size in 8-byte words whenever there is one, a Get's answer included; 0 for an empty table.
uint16_t records_offset(const std::vector<sa::PathRecord>& records) {
  return records.empty() ? 0 : sa::kPathRecordSize / 8;
}

uint8_t response_method(uint8_t method) {
  return method == 0x02 /* Set */ ? sa::method::kGetResp
                                  : static_cast<uint8_t>(method | sa::method::kResponseBit);
}

// As osm_sa_send_error: the request sent back with the status, its RMPP header as it came
// (active for a GetMulti, not for a GetTable), and a MultiPathRecord's attribute turned into
// PathRecord (seen with OpenSM 3.3.23 on ibsim).
sa::SaMad error_response(const sa::SaMad& request, uint16_t status) {
  sa::SaMad resp = response_to(request, response_method(request.mad.method), status);
  resp.rmpp = request.rmpp;
  if (resp.mad.attr_id == sa::attr::kMultiPathRecord) resp.mad.attr_id = sa::attr::kPathRecord;
  resp.data = request.data;
  resp.data.resize(sa::kSaDataSize);
  return resp;
}

// Prechecks of osm_pr_rcv_process on the request's fields; 0 when acceptable.
uint16_t request_status(const PathRequest& request) {
  const uint64_t m = request.comp_mask;
  if (has(m, pr::kRate | pr::kRateSelector) && !valid_rate(request.record.rate)) {
    return mad_status::sa(sa::status::kReqInvalid);
  }
  if (has(m, pr::kMtu | pr::kMtuSelector) && (request.record.mtu < 1 || request.record.mtu > 5)) {
    return mad_status::sa(sa::status::kReqInvalid);
  }
  if (has(m, pr::kServiceIdMsb) != has(m, pr::kServiceIdLsb)) {
    return mad_status::sa(sa::status::kInsufComps);
  }
  return 0;
}

// The destination LIDs a port pair's paths may use: those of its level's path-bits
// (path_bits.h), or every LID of the range. The level is looked at only for a destination with
// LMC > 0 (`levels`: the pair's, else matched here).
LidOffsets dlid_offsets(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                        Endpoint destination, const PairLevels* levels) {
  const uint8_t lmc = ctx.fabric->port(destination).lmc;
  if (ctx.policy == nullptr || lmc == 0) return allowed_dlid_offsets(nullptr, lmc);
  const policy::Level* level =
      levels != nullptr ? levels->forward()
                        : ctx.policy->match(match_query(ctx, request, source, destination)).level;
  return allowed_dlid_offsets(level != nullptr ? level_path_bits(*level) : nullptr, lmc);
}

// The answer to a request cut by a bound: ERR_NO_RESOURCES, told to the observer.
sa::SaMad bounded_response(const AnswerContext& ctx, const sa::SaMad& request, Bound bound) {
  if (ctx.observer != nullptr) ctx.observer->bounded(bound);
  return error_response(request, mad_status::sa(sa::status::kNoResources));
}

// Records of a PathRecord or MultiPathRecord query over every port pair its ends select and,
// within a pair, over the LID combinations of the ends' LID ranges (lid_pairs): at most
// `per_pair` records from one port pair (OpenSM's iterations / remaining paths) and `total` in
// all. The request's SLID / DLID components narrow an end to that one LID. Stops early, with
// the records so far, once `budget` is spent (budget.cut() says why).
std::vector<sa::PathRecord> path_records(const AnswerContext& ctx, const PathRequest& request,
                                         std::span<const Endpoint> sources,
                                         std::span<const Endpoint> destinations, size_t per_pair,
                                         size_t total, Budget& budget, PairOrder order) {
  std::vector<sa::PathRecord> out;
  const uint16_t slid_only = has(request.comp_mask, pr::kSlid) ? request.record.slid : 0;
  const uint16_t dlid_only = has(request.comp_mask, pr::kDlid) ? request.record.dlid : 0;
  {
    // Room for the records the pairs may give (capped): growing a table of thousands one
    // doubling at a time cost a third of its answer in copies and fresh pages.
    const size_t lids = size_t{1} << ctx.fabric->subnet_lmc();
    const size_t per =
        std::min(per_pair, (slid_only != 0 ? 1 : lids) * (dlid_only != 0 ? 1 : lids));
    constexpr size_t kMostReserved = 65536;
    const size_t pairs = sources.size() * destinations.size();
    out.reserve(
        std::min({total, kMostReserved, pairs > kMostReserved ? kMostReserved : pairs * per}));
  }
  // One port pair's records; false: stop (the total reached, the budget spent).
  auto pair = [&](const Endpoint& s, const Endpoint& d) {
    if (out.size() >= total) return false;
    const size_t limit = std::min(per_pair, total - out.size());
    if (limit == 0) return true;
    if (!budget.visit()) return false;
    if (!requester_allowed(ctx, s, d)) return true;
    size_t found = 0;
    // The pair's levels, shared by its LID combinations.
    std::optional<PairLevels> levels;
    if (!ctx.match_per_lid_combination) levels.emplace(ctx, request, s, d);
    const PairLevels* pair_levels = levels ? &*levels : nullptr;
    // A level's path-bits narrow the DLIDs, keeping OpenSM's order among those left; a DLID
    // the request names itself is answered as asked.
    const PortModel& dst = ctx.fabric->port(d);
    const LidOffsets offsets = dlid_only != 0 ? allowed_dlid_offsets(nullptr, dst.lmc)
                                              : dlid_offsets(ctx, request, s, d, pair_levels);
    // Visited one at a time: a Get or a small NumbPath stops after a few of the up to
    // 2^LMC x 2^LMC combinations.
    for_each_lid_pair(
        ctx.fabric->port(s), ctx.fabric->port(d), slid_only, dlid_only, [&](const LidPair& lp) {
          if (!offsets.test(static_cast<size_t>(lp.dlid - dst.lid))) return true;
          if (!budget.visit()) return false;
          PairAnswer a = answer_lid_pair(ctx, request, s, d, lp.slid, lp.dlid, pair_levels);
          if (ctx.observer != nullptr) ctx.observer->pair(a.level, a.rejection);
          if (a.record) {
            a.record->preference = lp.preference;
            out.push_back(*a.record);
            ++found;
            if (!budget.records(out.size())) return false;
          }
          return found < limit;
        });
    return !budget.cut();
  };
  if (order == PairOrder::kDestinationMajor) {
    for (const Endpoint& d : destinations)
      for (const Endpoint& s : sources)
        if (!pair(s, d)) return out;
  } else {
    for (const Endpoint& s : sources)
      for (const Endpoint& d : destinations)
        if (!pair(s, d)) return out;
  }
  return out;
}

// A multicast DGID: the group's record (pr_process_multicast), none or one. OpenSM answers it
// to anyone; we only to a requester whose P_Key table holds the group's P_Key, full or limited
// (as OpenSM's own MCMemberRecord queries show a group): a deliberate difference.
std::vector<sa::PathRecord> multicast_records(const AnswerContext& ctx, const PathRequest& req,
                                              bool get) {
  if (ctx.groups == nullptr) return {};
  const MulticastGroup* g = find_group(*ctx.groups, req.record.dgid);
  if (g == nullptr) return {};
  if (ctx.requester && !may_see_group(ctx.fabric->port(*ctx.requester).pkeys, *g)) return {};
  auto record = multicast_path(*g, req.record, req.comp_mask, get);
  if (!record) return {};
  return {*record};
}

// The paths between the ends a request names (an open end: every endpoint).
std::vector<sa::PathRecord> unicast_records(const AnswerContext& ctx, const PathRequest& req,
                                            const Ends& ends, bool get, Budget& budget) {
  // An open end stands for every endpoint, walked as OpenSM walks its ports: in the order of
  // its GUID map (computed once per fabric model).
  const std::vector<Endpoint>& all = ctx.fabric->endpoints_in_guid_map_order();
  const std::span<const Endpoint> sources =
      ends.source ? std::span<const Endpoint>(&*ends.source, 1) : std::span<const Endpoint>(all);
  const std::span<const Endpoint> destinations =
      ends.destination ? std::span<const Endpoint>(&*ends.destination, 1)
                       : std::span<const Endpoint>(all);
  // Neither end named: OpenSM walks every destination, and every source for each.
  const PairOrder order =
      !ends.source && !ends.destination ? PairOrder::kDestinationMajor : PairOrder::kSourceMajor;
  // A Get asks for one path (NumbPath 1, IBA 1.2 erratum): OpenSM stops at the first.
  if (get) return path_records(ctx, req, sources, destinations, 1, 1, budget, order);
  const bool numb_path = has(req.comp_mask, pr::kNumbPath);
  return path_records(ctx, req, sources, destinations,
                      numb_path ? req.record.numb_path : kUnlimited, kUnlimited, budget, order);
}

// A PathRecord request up to its ends (osm_pr_rcv_process before any path is computed).
struct PathRecordRequest {
  std::optional<uint16_t> status;  // answered with this status (0 is never set)
  bool drop = false;               // not answered at all (an unknown requester)
  PathRequest req;
  bool multicast = false;  // a multicast DGID: the group's record, `ends` unset
  Ends ends;
};

PathRecordRequest path_record_request(const AnswerContext& ctx, const sa::SaMad& request,
                                      const DecodedQuery& query) {
  PathRecordRequest out;
  const uint8_t method = request.mad.method;
  if (method != sa::method::kGet && method != sa::method::kGetTable) {
    out.status = mad_status::kUnsupportedMethodAttr;
    return out;
  }
  if (!query.path) {
    out.status = mad_status::sa(sa::status::kReqInvalid);
    return out;
  }
  out.req = PathRequest{*query.path, request.sa.comp_mask};
  if (uint16_t status = request_status(out.req)) {
    out.status = status;
    return out;
  }
  // After the prechecks, before anything is looked up: osm_pr_rcv_process.
  if (ctx.requester_unknown) {
    out.drop = true;
    return out;
  }
  if (has(out.req.comp_mask, pr::kDgid) && out.req.record.dgid[0] == 0xFF) {
    out.multicast = true;
    return out;
  }
  out.ends = end_points(*ctx.fabric, out.req);
  if (out.ends.status != 0) out.status = out.ends.status;
  return out;
}

std::optional<sa::SaMad> answer_path_record(const AnswerContext& ctx, const sa::SaMad& request,
                                            const DecodedQuery& decoded) {
  const uint8_t method = request.mad.method;
  PathRecordRequest parsed = path_record_request(ctx, request, decoded);
  if (parsed.status) return error_response(request, *parsed.status);
  if (parsed.drop) return std::nullopt;
  const PathRequest& req = parsed.req;
  std::vector<sa::PathRecord> records;
  if (parsed.multicast) {
    records = multicast_records(ctx, req, method == sa::method::kGet);
  } else if (!parsed.ends.unknown) {
    Budget budget(ctx.limits, method == sa::method::kGetTable);
    records = unicast_records(ctx, req, parsed.ends, method == sa::method::kGet, budget);
    if (auto cut = budget.cut()) return bounded_response(ctx, request, *cut);
  }
  if (method == sa::method::kGet) {
    // GetTable reports neither unknown ends nor rejections: only Get carries the status.
    if (records.empty()) return error_response(request, mad_status::sa(sa::status::kNoRecords));
    if (records.size() > 1) {
      return error_response(request, mad_status::sa(sa::status::kTooManyRecords));
    }
  }
  if (has(req.comp_mask, pr::kSgid)) {
    // OpenSM answers with the SGID as asked (a link-local one may carry another prefix).
    for (sa::PathRecord& r : records) r.sgid = req.record.sgid;
  }
  sa::SaMad resp = response_to(request, response_method(method), 0);
  resp.sa.attr_offset = records_offset(records);
  // Grown once: a table of thousands of records otherwise moves its bytes a dozen times.
  resp.data.reserve(records.size() * sa::kPathRecordSize);
  for (const sa::PathRecord& r : records) {
    auto bytes = sa::encode_path_record(r);
    if (bytes) resp.data.insert(resp.data.end(), bytes->begin(), bytes->end());
  }
  return resp;
}

}  // namespace detail

using namespace detail;

std::vector<LidPair> lid_pairs(const PortModel& source, const PortModel& destination,
                               uint16_t slid_only, uint16_t dlid_only) {
  std::vector<LidPair> out;
  for_each_lid_pair(source, destination, slid_only, dlid_only, [&out](const LidPair& lp) {
    out.push_back(lp);
    return true;
  });
  return out;
}

sa::SaMad status_response(const sa::SaMad& request, uint16_t status) {
  return error_response(request, status);
}

DecodedQuery decode_query(const sa::SaMad& request) {
  DecodedQuery out;
  if (request.mad.attr_id == sa::attr::kPathRecord) {
    if (auto r = sa::decode_path_record(request.data)) out.path = *r;
  } else if (request.mad.attr_id == sa::attr::kMultiPathRecord) {
    out.multipath = decode_multipath(request);
  }
  return out;
}

size_t estimate_work(const AnswerContext& ctx, const sa::SaMad& request) {
  return estimate_work(ctx, request, decode_query(request));
}

size_t estimate_work(const AnswerContext& ctx, const sa::SaMad& request,
                     const DecodedQuery& decoded) {
  if ((request.mad.method & sa::method::kResponseBit) != 0) return 0;
  if (!sm_key_accepted(request, ctx.sa_key)) return 0;
  const FabricModel& f = *ctx.fabric;
  auto lids = [&f](Endpoint e) { return size_t{1} << f.port(e).lmc; };
  auto sum_lids = [&lids](std::span<const Endpoint> ends) {
    size_t n = 0;
    for (const Endpoint& e : ends) n += lids(e);
    return n;
  };
  switch (request.mad.attr_id) {
    case sa::attr::kPathRecord: {
      const PathRecordRequest parsed = path_record_request(ctx, request, decoded);
      if (parsed.status || parsed.drop) return 0;
      if (parsed.multicast) return 1;
      if (parsed.ends.unknown) return 0;
      const uint64_t mask = parsed.req.comp_mask;
      auto end = [&](const std::optional<Endpoint>& e, bool one_lid) {
        if (one_lid) return size_t{1};
        return e ? lids(*e) : sum_lids(f.endpoints_in_guid_map_order());
      };
      return end(parsed.ends.source, has(mask, pr::kSlid)) *
             end(parsed.ends.destination, has(mask, pr::kDlid));
    }
    case sa::attr::kMultiPathRecord: {
      const MultiPathRequest parsed = multipath_request(ctx, request, decoded);
      if (parsed.status || parsed.drop) return 0;
      return sum_lids(parsed.sources) * sum_lids(parsed.destinations);
    }
    default: return 0;
  }
}

PairAnswer answer_pair(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                       Endpoint destination) {
  return answer_lid_pair(ctx, request, source, destination, ctx.fabric->port(source).lid,
                         ctx.fabric->port(destination).lid);
}

const policy::Level* PairLevels::get(std::optional<const policy::Level*>& slot, Endpoint from,
                                     Endpoint to) const {
  if (!slot) {
    slot = ctx_.policy != nullptr ? ctx_.policy->match(match_query(ctx_, request_, from, to)).level
                                  : nullptr;
  }
  return *slot;
}

PairAnswer answer_lid_pair(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                           Endpoint destination, uint16_t slid, uint16_t dlid,
                           const PairLevels* levels) {
  using Matched = std::optional<const policy::Level*>;
  PairAnswer out;
  Direction forward = path_parms(ctx, request, source, destination, slid, dlid,
                                 levels != nullptr ? Matched(levels->forward()) : std::nullopt);
  out.level = forward.level;
  if (forward.rejection != Rejection::kNone) {
    out.rejection = forward.rejection;
    return out;
  }
  Direction reverse = path_parms(ctx, request, destination, source, dlid, slid,
                                 levels != nullptr ? Matched(levels->reverse()) : std::nullopt);
  const bool reversible = reverse.rejection == Rejection::kNone;
  if (!reversible && has(request.comp_mask, pr::kReversible) && request.record.reversible) {
    out.rejection = reverse.rejection;
    return out;
  }
  forward.record.reversible = reversible;
  // The rate a record announces: only what both ends say they support (OpenSM checks the
  // source, and the destination of a reversible path), after the selectors chose it.
  const FabricModel& fabric = *ctx.fabric;
  const PortModel& src = fabric.port(source);
  if (fabric.original_extended_rates_only) {
    forward.record.rate = original_extended_rate(forward.record.rate);
  } else {
    forward.record.rate =
        announced_rate(forward.record.rate, src.capability_mask, src.capability_mask2);
  }
  if (reversible && !fabric.original_extended_rates_only) {
    const PortModel& dst = fabric.port(destination);
    forward.record.rate =
        announced_rate(forward.record.rate, dst.capability_mask, dst.capability_mask2);
  }
  out.record = forward.record;
  out.links = forward.links;
  return out;
}

void AnswerContext::set_requester_lid(uint16_t slid) {
  requester = fabric->by_lid(slid);
  requester_unknown = !requester;
}

sa::ClassPortInfo class_port_info() {
  sa::ClassPortInfo info;
  info.base_version = sa::kBaseVersion;
  info.class_version = sa::kSaClassVersion;
  info.capability_mask = kCapabilityMask;
  info.capability_mask2 = kCapabilityMask2;
  info.resp_time_value = kRespTimeValue;
  // As OpenSM fills them (seen with saquery -c): no redirection, the well-known QP1 Q_Key.
  info.redirect_qp = 1;
  info.redirect_qkey = sa::kSaQkey;
  info.trap_qkey = sa::kSaQkey;
  return info;
}

std::optional<sa::SaMad> answer(const AnswerContext& ctx, const sa::SaMad& request) {
  return answer(ctx, request, decode_query(request));
}

std::optional<sa::SaMad> answer(const AnswerContext& ctx, const sa::SaMad& request,
                                const DecodedQuery& decoded) {
  if ((request.mad.method & sa::method::kResponseBit) != 0) return std::nullopt;
  if (!sm_key_accepted(request, ctx.sa_key)) return std::nullopt;
  // The class version is not checked: OpenSM answers a version-1 PathRecord Get as any other.
  switch (request.mad.method) {
    case sa::method::kGet:
    case 0x02:  // Set
    case sa::method::kGetTable:
    case sa::method::kGetMulti:
    case 0x15:  // Delete
      break;
    default: return error_response(request, mad_status::kUnsupportedMethod);
  }
  switch (request.mad.attr_id) {
    case sa::attr::kPathRecord: return answer_path_record(ctx, request, decoded);
    case sa::attr::kMultiPathRecord: return answer_multipath(ctx, request, decoded);
    case sa::attr::kClassPortInfo: {
      // osm_cpi_rcv_process: any method but Get is an invalid request.
      if (request.mad.method != sa::method::kGet) {
        return error_response(request, mad_status::sa(sa::status::kReqInvalid));
      }
      sa::SaMad resp = response_to(request, sa::method::kGetResp, 0);
      auto bytes = sa::encode_class_port_info(class_port_info());
      if (bytes) resp.data = *bytes;
      return resp;
    }
    default: return error_response(request, mad_status::kUnsupportedMethodAttr);
  }
}

}  // namespace rdmaqos::sad
