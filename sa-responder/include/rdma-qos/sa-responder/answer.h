// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA answer engine: turns a decoded SA request into the response OpenSM 3.3.23 would give
// with QoS on (PathRecord, MultiPathRecord, ClassPortInfo), shaped by the policy's levels.
// Pure functions over a fabric model and a policy snapshot: no I/O, no global state.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/policy/fabric.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-client/path_record.h"
#include "rdma-qos/sa-responder/fabric_model.h"
#include "rdma-qos/sa-responder/multicast.h"

namespace rdmaqos::sad {

// What this SA serves, not OpenSM's list (Documentation/opensm-semantics.md, "Where rdma-qos
// answers differently on purpose"): a client that trusts a bit must get the answer it implies.
// CapabilityMask: IsMultiPathSupported (bit 10) alone; no notices, UD multicast or PortInfo
// capability-mask matching, which are other attributes this SA does not answer.
inline constexpr uint16_t kCapabilityMask = 1u << 10;
// CapabilityMask2: IsQoSSupported (1), and the rate encodings our PathRecords may carry (they
// take OpenSM's rates): IsExtendedSpeedsSupported (7), IsLinkWidth2xSupported (13),
// IsLinkSpeedHDRSupported (15). No multicast, alias-GUID or PortInfoRecord bits.
inline constexpr uint32_t kCapabilityMask2 = 1u << 1 | 1u << 7 | 1u << 13 | 1u << 15;
inline constexpr uint8_t kRespTimeValue = 0x10;

// MAD status values of the common part (bits 2-4: invalid field).
namespace mad_status {
inline constexpr uint16_t kBadVersion = 0x0004;
inline constexpr uint16_t kUnsupportedMethod = 0x0008;
inline constexpr uint16_t kUnsupportedMethodAttr = 0x000C;
inline constexpr uint16_t sa(uint8_t code) {
  return static_cast<uint16_t>(code << 8);
}
}  // namespace mad_status

// Why one direction of a pair gave no path (for counters and explain; never sent on the wire).
enum class Rejection {
  kNone,
  kNoRoute,             // the LFTs do not lead to the destination
  kLevelSlDropped,      // the level's SL maps to VL 15 on the path (OpenSM: silent)
  kSelector,            // a requested MTU / rate / packet-life selector cannot be met
  kPkeyNotShared,       // requested pkey not shared (1F1A)
  kPkeyNotInLevel,      // requested pkey outside the level's pkeys (1F1D)
  kLevelPkeyNotShared,  // no level pkey shared by both ends (1F1E)
  kNoCommonPkey,        // the ends share no pkey (1F1B)
  kSlNotLevel,          // requested SL differs from the level's (1F1F)
  kSlDropped,           // the chosen SL maps to VL 15 (1F24)
  kSlNotRouting,        // requested SL differs from the routing engine's (1F2A)
};

// The subnet manager's routing engine where it gives each path its SL (OpenSM's path_sl: LASH,
// DFSSSP, Nue, torus-2QoS). Those SLs select the virtual layers that keep a looped fabric free
// of credit loops, so OpenSM's PathRecord handler lets the engine override the SL it chose from
// the request, the level and the partition; an answer with another SL could deadlock the fabric.
class RoutingSl {
 public:
  virtual ~RoutingSl() = default;
  // The engine's SL for the path from `slid` to `dlid`, told the SL chosen so far (`hint`).
  virtual uint8_t path_sl(uint8_t hint, uint16_t slid, uint16_t dlid) const = 0;
};

// Which bound of AnswerLimits cut an answer short.
enum class Bound {
  kRecords,  // the table had more records than AnswerLimits::max_records
  kTime,     // the answer was still being computed at AnswerLimits::deadline
};

// Told about every source/destination pair the engine considers, for counters. Called on the
// answer path: implementations must be cheap.
class AnswerObserver {
 public:
  virtual ~AnswerObserver() = default;
  // `level`: the forward direction's level (null: none); `rejection`: kNone when the pair gave
  // a record.
  virtual void pair(const policy::Level* level, Rejection rejection) = 0;
  // The answer was cut by `bound`: its requester gets ERR_NO_RESOURCES instead.
  virtual void bounded(Bound /*bound*/) {}
};

// Bounds on the work and size of one answer. OpenSM has none: an open-ended PathRecord
// GetTable costs it (and us, unbounded) time and memory quadratic in the fabric. A request that
// would pass a bound is answered with ERR_NO_RESOURCES (SA status 1) and no records, a
// deliberate difference (Documentation/opensm-semantics.md); anything within the bounds gets
// the same answer as without them.
struct AnswerLimits {
  // Most PathRecords one table answer (GetTable PathRecord, GetMulti MultiPathRecord) may
  // carry; 0: no bound. A Get answers one record and is never cut by this.
  size_t max_records = 0;
  // A PathRecord or MultiPathRecord answer still being computed then is given up (the clock is
  // read once every kDeadlineCheckEvery LID combinations). nullopt: no bound.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};
inline constexpr size_t kDeadlineCheckEvery = 256;

// OpenSM's default SA key (opensm.conf sa_key): the SM_Key of trusted SA requests.
inline constexpr uint64_t kDefaultSaKey = 1;

// Everything one answer depends on. The pointers must stay valid during the call; the daemon
// holds shared snapshots so a reload never changes them under a query.
struct AnswerContext {
  const FabricModel* fabric = nullptr;
  // The policy in force; null: no policy (partition SLs apply, as OpenSM with -Q and no policy).
  const policy::CompiledPolicy* policy = nullptr;
  // Partitions, for partition SLs when no level applies.
  const std::vector<policy::Partition>* partitions = nullptr;
  // The requester's port, from the MAD's source LID (set_requester_lid): it must share a
  // partition with both ends of every path it is given. nullopt, with `requester_unknown`
  // false, skips that check (tools and tests that ask on nobody's behalf).
  std::optional<Endpoint> requester;
  // The MAD's source LID is no port of the model. PathRecord and MultiPathRecord requests then
  // get no answer once their fields passed the checks answered with a status, as from OpenSM
  // (ERR 1F16 / 4517 "Cannot find requester physical port"); ClassPortInfo is answered.
  bool requester_unknown = false;
  // The SA key: a request with a non-zero SM_Key other than this one gets no answer at all
  // (OpenSM's SA MAD controller, ERR 1A04). SM_Key 0 (untrusted) and this key (trusted) get
  // the same PathRecord, MultiPathRecord and ClassPortInfo answers, as from OpenSM.
  uint64_t sa_key = kDefaultSaKey;
  AnswerObserver* observer = nullptr;  // optional
  // The multicast groups a PathRecord's multicast DGID may name (ipoib_broadcast_groups of
  // the partitions); null: none, every multicast DGID gets no record.
  const std::vector<MulticastGroup>* groups = nullptr;
  // Bounds on this answer (none by default, as OpenSM).
  AnswerLimits limits;
  // The routing engine's SLs; null: the SL is the request's, the level's or the partition's.
  const RoutingSl* routing = nullptr;
  // Match the policy for every LID combination of a port pair, as the engine once did, instead
  // of once per pair and direction: the same answers, slower with LMC > 0. Only answer_bench
  // sets it, to print both ways side by side.
  bool match_per_lid_combination = false;

  // Sets `requester` and `requester_unknown` for a request from `slid` (`fabric` set first).
  void set_requester_lid(uint16_t slid);
};

// False when the request's SM_Key is neither 0 nor `sa_key`: such a request is dropped.
inline bool sm_key_accepted(const sa::SaMad& request, uint64_t sa_key) {
  return request.sa.sm_key == 0 || request.sa.sm_key == sa_key;
}

// The requirements of a PathRecord or (converted) MultiPathRecord query, as PathRecord fields
// and PathRecord component-mask bits.
struct PathRequest {
  sa::PathRecord record;
  uint64_t comp_mask = 0;
};

struct PairAnswer {
  std::optional<sa::PathRecord> record;
  Rejection rejection = Rejection::kNone;
  const policy::Level* level = nullptr;  // the forward direction's level, if any
  int links = 0;                         // links the forward path crosses (with a record)
};

// One source/destination pair (base LIDs), both directions, as pr_rcv_get_lid_pair_path: the
// record of the forward direction with the reversible bit from the reverse one.
PairAnswer answer_pair(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                       Endpoint destination);
// The policy's levels of one port pair for one request, each direction matched at most once:
// a match depends on the ports and the request, never on which LIDs of their ranges a path
// uses, so the 2^LMC x 2^LMC combinations of a pair share it.
class PairLevels {
 public:
  PairLevels(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
             Endpoint destination)
      : ctx_(ctx), request_(request), source_(source), destination_(destination) {}
  const policy::Level* forward() const { return get(forward_, source_, destination_); }
  const policy::Level* reverse() const { return get(reverse_, destination_, source_); }

 private:
  const policy::Level* get(std::optional<const policy::Level*>& slot, Endpoint from,
                           Endpoint to) const;
  const AnswerContext& ctx_;
  const PathRequest& request_;
  Endpoint source_, destination_;
  mutable std::optional<const policy::Level*> forward_, reverse_;
};

// The same for one LID of each end's range (LMC > 0): the path from `slid` to `dlid`, checked
// back from `dlid` to `slid`. `levels`: the pair's levels when the caller visits several of
// its combinations (null: matched here).
PairAnswer answer_lid_pair(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                           Endpoint destination, uint16_t slid, uint16_t dlid,
                           const PairLevels* levels = nullptr);

// The (SLID, DLID, preference) combinations OpenSM tries for one port pair, in its order: the
// "fully redundant" pairs at equal offsets into both LID ranges first (preference 0), then every
// other combination, source offset outer, destination offset inner (preference 2). `slid_only` /
// `dlid_only` (non-zero) narrow an end to one LID, as a request's SLID / DLID components do.
struct LidPair {
  uint16_t slid = 0;
  uint16_t dlid = 0;
  uint8_t preference = 0;
  friend bool operator==(const LidPair&, const LidPair&) = default;
};
std::vector<LidPair> lid_pairs(const PortModel& source, const PortModel& destination,
                               uint16_t slid_only = 0, uint16_t dlid_only = 0);
// The same combinations, in the same order, handed to `visit` one at a time until it returns
// false (no list is built: a query that wants one path looks at one combination).
template <typename Visit>
void for_each_lid_pair(const PortModel& source, const PortModel& destination, uint16_t slid_only,
                       uint16_t dlid_only, Visit&& visit) {
  auto range = [](const PortModel& p, uint16_t only) {
    if (only != 0) return std::pair<uint32_t, uint32_t>{only, only};
    return std::pair<uint32_t, uint32_t>{p.lid, p.lid + (1u << p.lmc) - 1};
  };
  auto [smin, smax] = range(source, slid_only);
  auto [dmin, dmax] = range(destination, dlid_only);
  if (smin == 0 || dmin == 0) return;
  auto pair = [](uint32_t s, uint32_t d, uint8_t preference) {
    return LidPair{static_cast<uint16_t>(s), static_cast<uint16_t>(d), preference};
  };
  for (uint32_t s = smin, d = dmin; s <= smax && d <= dmax; ++s, ++d) {
    if (!visit(pair(s, d, 0))) return;
  }
  for (uint32_t s = smin; s <= smax; ++s) {
    for (uint32_t d = dmin; d <= dmax; ++d) {
      if (s - smin != d - dmin && !visit(pair(s, d, 2))) return;
    }
  }
}

// The response MAD to a request MAD; nullopt: no response (the request is itself a response,
// its SM_Key is wrong: see AnswerContext::sa_key, or it asks for paths on behalf of a LID the
// model does not know: AnswerContext::requester_unknown).
// Every other request gets an answer, unsupported methods and attributes included (OpenSM
// sends none for SubnAdmSet(PathRecord): a deliberate difference).
std::optional<sa::SaMad> answer(const AnswerContext& ctx, const sa::SaMad& request);

// The record of a PathRecord or MultiPathRecord request decoded once, by the front end that
// received it, for every step that reads it: the plugin's rules for what OpenSM answers, the
// work estimate and the answer (each decoded it again before).
struct DecodedQuery {
  std::optional<sa::PathRecord> path;  // a PathRecord request whose record decodes
  // A MultiPathRecord request whose record decodes, with at most 11 GIDs in all, sources first
  // (OpenSM's IB_MULTIPATH_MAX_GIDS: the counts are clamped before the GIDs are read).
  std::optional<sa::MultiPathRecord> multipath;
};
DecodedQuery decode_query(const sa::SaMad& request);
// answer() with `request`'s record as decode_query(request) gave it.
std::optional<sa::SaMad> answer(const AnswerContext& ctx, const sa::SaMad& request,
                                const DecodedQuery& decoded);

// An upper bound, computed before any pair is expanded, on the LID combinations (one path
// each way) `answer` would look at for `request`: the product of the two ends' LID counts, an
// open end counting every LID of the fabric (a SLID or DLID component narrows its end to one),
// summed over a MultiPathRecord's port pairs. 0 for a request answered without any path
// (ClassPortInfo, a malformed or refused request, an end that names no port); 1 for a
// multicast DGID. A Get counts as a GetTable: one that finds no path looks at them all.
// Cheap (no pair is expanded; an open end sums the endpoints' LID ranges once): a front end
// decides by it where to compute an answer (rdma-qos-sad: larger ones on a worker thread).
size_t estimate_work(const AnswerContext& ctx, const sa::SaMad& request);
size_t estimate_work(const AnswerContext& ctx, const sa::SaMad& request,
                     const DecodedQuery& decoded);

// The request sent back with `status` and no records, as OpenSM's osm_sa_send_error: what
// `answer` gives for every refused request (a front end uses it for the BUSY it answers itself).
sa::SaMad status_response(const sa::SaMad& request, uint16_t status);

// Whether `gid` names a port of this subnet (a link-local GID, or one with the subnet's prefix)
// that `fabric` does not have: an alias GUID (SR-IOV virtual functions register theirs with
// SubnAdmSet(GUIDInfoRecord), and OpenSM resolves them), or a port added since the model was
// built. Multicast GIDs name no port.
bool names_unknown_local_port(const FabricModel& fabric, const sa::Gid& gid);

// The ClassPortInfo this SA advertises.
sa::ClassPortInfo class_port_info();

}  // namespace rdmaqos::sad
