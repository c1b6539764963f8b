// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MultiPathRecord answers with OpenSM's semantics: the request's GIDs to port pairs, the paths
// of every pair (GetMulti), and the alternate-path pair of a two-by-two request (APM).
#include <endian.h>

#include <algorithm>
#include <span>

#include "rdma-qos/sa-client/multipath_record.h"

#include "answer_detail.h"

namespace rdmaqos::sad::detail {
namespace {

// MultiPathRecord components converted to PathRecord ones (all the engine reads).
PathRequest from_multipath(const sa::MultiPathRecord& m, uint64_t mask) {
  namespace mp = sa::mpr_mask;
  PathRequest r;
  static constexpr std::pair<uint64_t, uint64_t> kMap[] = {
      {mp::kRawTraffic, pr::kRawTraffic},
      {mp::kFlowLabel, pr::kFlowLabel},
      {mp::kHopLimit, pr::kHopLimit},
      {mp::kTClass, pr::kTClass},
      {mp::kReversible, pr::kReversible},
      {mp::kNumbPath, pr::kNumbPath},
      {mp::kPKey, pr::kPKey},
      {mp::kQosClass, pr::kQosClass},
      {mp::kSl, pr::kSl},
      {mp::kMtuSelector, pr::kMtuSelector},
      {mp::kMtu, pr::kMtu},
      {mp::kRateSelector, pr::kRateSelector},
      {mp::kRate, pr::kRate},
      {mp::kPacketLifeSelector, pr::kPacketLifeSelector},
      {mp::kPacketLife, pr::kPacketLife},
      {mp::kServiceIdMsb, pr::kServiceIdMsb},
      {mp::kServiceIdLsb, pr::kServiceIdLsb},
  };
  for (auto [from, to] : kMap) {
    if (mask & from) r.comp_mask |= to;
  }
  sa::PathRecord& p = r.record;
  p.raw_traffic = m.raw_traffic;
  p.flow_label = m.flow_label;
  p.hop_limit = m.hop_limit;
  p.tclass = m.tclass;
  p.reversible = m.reversible;
  p.numb_path = m.numb_path;
  p.pkey = m.pkey;
  p.qos_class = m.qos_class;
  p.sl = m.sl;
  p.mtu_selector = m.mtu_selector;
  p.mtu = m.mtu;
  p.rate_selector = m.rate_selector;
  p.rate = m.rate;
  p.packet_life_selector = m.packet_life_selector;
  p.packet_life = m.packet_life;
  p.service_id = m.service_id;
  return r;
}

// One port pair of an alternate-path (APM) request: the first LID combination with a path,
// trying the fully redundant combinations only (equal offsets into both ranges), starting at
// `base_offset` into each range and wrapping (mpr_rcv_get_apm_port_pair_paths).
PairAnswer apm_pair(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                    Endpoint destination, unsigned base_offset) {
  const PortModel& s = ctx.fabric->port(source);
  const PortModel& d = ctx.fabric->port(destination);
  const unsigned source_lids = 1u << s.lmc;
  const unsigned destination_lids = 1u << d.lmc;
  unsigned so = base_offset % source_lids;
  unsigned doff = base_offset % destination_lids;
  // A level's path-bits: only the combinations whose DLID they allow, and then every DLID
  // offset is tried once from the hashed one (the source offset wrapping along), so that an
  // allowed DLID past the shorter range is still reached.
  std::optional<PairLevels> levels;
  if (!ctx.match_per_lid_combination) levels.emplace(ctx, request, source, destination);
  const PairLevels* pair_levels = levels ? &*levels : nullptr;
  const LidOffsets offsets = dlid_offsets(ctx, request, source, destination, pair_levels);
  const unsigned tries = offsets.count() < destination_lids
                             ? destination_lids
                             : std::min(source_lids, destination_lids);
  PairAnswer last;
  for (unsigned i = 0; i < tries; ++i) {
    if (!offsets.test(doff)) {
      so = (so + 1) % source_lids;
      doff = (doff + 1) % destination_lids;
      continue;
    }
    last = answer_lid_pair(ctx, request, source, destination, static_cast<uint16_t>(s.lid + so),
                           static_cast<uint16_t>(d.lid + doff), pair_levels);
    if (ctx.observer != nullptr) ctx.observer->pair(last.level, last.rejection);
    if (last.record) {
      last.record->preference = 0;
      return last;
    }
    so = (so + 1) % source_lids;
    doff = (doff + 1) % destination_lids;
  }
  return last;
}

// A MultiPathRecord with two SGIDs, two DGIDs and NumbPath 2 asks for a path and its alternate
// (mpr_rcv_get_apm_paths), computed as OpenSM 3.3.23 does (its debug log shows each step):
// - each end's two ports are ordered by GUID (network order read as a host integer);
// - the base LIDs of the first source and first destination, read in network byte order as
//   host integers (OpenSM hashes them unconverted), are hashed into a LID offset
//   (((low >> LMC) << 4 | high >> LMC) % 103, LMC the subnet's); pairs from the second source
//   use the next offset, so that on a fat tree with LMC > 0 the two paths take other LIDs;
// - of the two diagonals {S0-D0, S1-D1} and {S0-D1, S1-D0}, each scored by the fewest links of
//   its paths (a missing path does not count, nor, as first of its diagonal, a loopback's 0),
//   the first wins unless the second scores lower; the winner's paths are answered, one or none
//   if it lacks some.
// One deliberate difference: OpenSM does not check here that the requester shares a partition
// with the four ports; we do, as for every other PathRecord or MultiPathRecord query.
std::vector<sa::PathRecord> apm_records(const AnswerContext& ctx, const PathRequest& request,
                                        const std::vector<Endpoint>& sources,
                                        const std::vector<Endpoint>& destinations) {
  const FabricModel& f = *ctx.fabric;
  auto ordered = [&f](Endpoint a, Endpoint b) {
    return htobe64(f.port(a).guid) < htobe64(f.port(b).guid) ? std::array<Endpoint, 2>{a, b}
                                                             : std::array<Endpoint, 2>{b, a};
  };
  const std::array<Endpoint, 2> s = ordered(sources[0], sources[1]);
  const std::array<Endpoint, 2> d = ordered(destinations[0], destinations[1]);
  const unsigned lmc = f.subnet_lmc();
  auto hash = [lmc](unsigned a, unsigned b) { return (((a >> lmc) << 4) | (b >> lmc)) % 103; };
  auto network_order = [](uint16_t lid) -> unsigned { return htobe16(lid); };
  const unsigned s0 = network_order(f.port(s[0]).lid), d0 = network_order(f.port(d[0]).lid);
  const unsigned base = s0 < d0 ? hash(s0, d0) : hash(d0, s0);

  PairAnswer m[2][2];
  for (size_t i = 0; i < 2; ++i) {
    for (size_t j = 0; j < 2; ++j) {
      if (requester_allowed(ctx, s[i], d[j])) {
        m[i][j] = apm_pair(ctx, request, s[i], d[j], base + static_cast<unsigned>(i));
      }
    }
  }
  // A diagonal's score: the first path's links, replaced by the second path's when the first is
  // missing or a loopback (0), else the smaller of the two; 0 without any path.
  auto score = [](const PairAnswer& first, const PairAnswer& second) {
    int links = first.record ? first.links : 0;
    if (second.record) links = links != 0 ? std::min(links, second.links) : second.links;
    return links;
  };
  const bool diagonal_a = score(m[0][0], m[1][1]) <= score(m[0][1], m[1][0]);
  std::vector<sa::PathRecord> out;
  for (const PairAnswer* p : diagonal_a ? std::array<const PairAnswer*, 2>{&m[0][0], &m[1][1]}
                                        : std::array<const PairAnswer*, 2>{&m[0][1], &m[1][0]}) {
    if (p->record) out.push_back(*p->record);
  }
  return out;
}

}  // namespace

std::optional<sa::MultiPathRecord> decode_multipath(const sa::SaMad& request) {
  // At most 11 GIDs count, sources first (OpenSM's IB_MULTIPATH_MAX_GIDS): the counts are
  // clamped before decoding, so GIDs announced past the eleventh are never read.
  std::vector<uint8_t> data = request.data;
  if (data.size() > kDgidCountOffset) {
    data[kSgidCountOffset] = std::min<uint8_t>(data[kSgidCountOffset], kMaxMultiPathGids);
    data[kDgidCountOffset] = std::min<uint8_t>(
        data[kDgidCountOffset], static_cast<uint8_t>(kMaxMultiPathGids - data[kSgidCountOffset]));
  }
  auto decoded = sa::decode_multipath_record(data);
  if (!decoded) return std::nullopt;
  return std::move(*decoded);
}

MultiPathRequest multipath_request(const AnswerContext& ctx, const sa::SaMad& request,
                                   const DecodedQuery& query) {
  namespace mp = sa::mpr_mask;
  MultiPathRequest out;
  auto fail = [&out](uint16_t status) {
    out.status = status;
    return out;
  };
  // A request without RMPP is refused before its method is looked at (a Get without RMPP gets
  // REQ_INVALID from OpenSM, one with RMPP "unsupported method/attribute").
  if (!request.rmpp.active()) return fail(mad_status::sa(sa::status::kReqInvalid));
  if (request.mad.method != sa::method::kGetMulti) return fail(mad_status::kUnsupportedMethodAttr);
  const uint64_t mask = request.sa.comp_mask;
  if (!has(mask, mp::kSgidCount) || !has(mask, mp::kDgidCount) ||
      has(mask, mp::kServiceIdMsb) != has(mask, mp::kServiceIdLsb)) {
    return fail(mad_status::sa(sa::status::kInsufComps));
  }
  const std::optional<sa::MultiPathRecord>& decoded = query.multipath;
  if (!decoded) return fail(mad_status::sa(sa::status::kReqInvalid));
  out.req = from_multipath(*decoded, mask);
  out.numb_path = decoded->numb_path;
  if (uint16_t status = request_status(out.req)) return fail(status);
  // After the prechecks, before the GIDs are looked up: osm_mpr_rcv_process.
  if (ctx.requester_unknown) {
    out.drop = true;
    return out;
  }

  // Every GID must name a port of this subnet (multicast and other prefixes do not):
  // INVALID_GID otherwise, as OpenSM's mpr_rcv_get_gids; no source or no destination at all is
  // REQ_INVALID.
  bool invalid_gid = false;
  auto resolve = [&](const std::vector<sa::Gid>& gids) {
    std::vector<Endpoint> ports;
    for (const sa::Gid& g : gids) {
      std::optional<Endpoint> e;
      if (names_local_port(*ctx.fabric, g)) e = ctx.fabric->by_guid(sa::gid_guid(g));
      if (e) {
        ports.push_back(*e);
      } else {
        invalid_gid = true;
      }
    }
    return ports;
  };
  out.sources = resolve(decoded->sgids);
  out.destinations = resolve(decoded->dgids);
  if (invalid_gid) return fail(mad_status::sa(sa::status::kInvalidGid));
  if (out.sources.empty() || out.destinations.empty()) {
    return fail(mad_status::sa(sa::status::kReqInvalid));
  }
  return out;
}

std::optional<sa::SaMad> answer_multipath(const AnswerContext& ctx, const sa::SaMad& request,
                                          const DecodedQuery& decoded) {
  namespace mp = sa::mpr_mask;
  const MultiPathRequest parsed = multipath_request(ctx, request, decoded);
  if (parsed.status) return error_response(request, *parsed.status);
  if (parsed.drop) return std::nullopt;
  const PathRequest& req = parsed.req;
  const std::vector<Endpoint>& sources = parsed.sources;
  const std::vector<Endpoint>& destinations = parsed.destinations;
  std::vector<sa::PathRecord> records;
  Budget budget(ctx.limits, true);
  if (sources.size() == 2 && destinations.size() == 2 && parsed.numb_path == 2) {
    // NumbPath 2 selects the alternate-path answer with or without its component bit.
    records = apm_records(ctx, req, sources, destinations);
    budget.records(records.size());
  } else {
    // NumbPath bounds the whole answer (OpenSM: 127 without it), taken pair after pair.
    const size_t max_paths =
        has(request.sa.comp_mask, mp::kNumbPath) ? parsed.numb_path : kMaxMultiPaths;
    records = path_records(ctx, req, sources, destinations, kUnlimited, max_paths, budget);
  }
  if (auto cut = budget.cut()) return bounded_response(ctx, request, *cut);
  sa::SaMad resp = response_to(request, sa::method::kGetMultiResp, 0);
  resp.mad.attr_id = sa::attr::kPathRecord;
  resp.sa.attr_offset = records_offset(records);
  for (const sa::PathRecord& r : records) {
    auto bytes = sa::encode_path_record(r);
    if (bytes) resp.data.insert(resp.data.end(), bytes->begin(), bytes->end());
  }
  return resp;
}

}  // namespace rdmaqos::sad::detail
