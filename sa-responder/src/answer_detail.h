// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Internal to the answer engine: what answer.cpp (PathRecord, the dispatch, the work estimate)
// and answer_multipath.cpp (MultiPathRecord) share. Not part of sa-responder's API.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/path_bits.h"

namespace rdmaqos::sad::detail {

namespace pr = sa::pr_mask;

constexpr size_t kUnlimited = SIZE_MAX;
constexpr size_t kMaxMultiPaths = 127;     // OpenSM's OSM_SA_MPR_MAX_NUM_PATH
constexpr uint8_t kMaxMultiPathGids = 11;  // OpenSM's IB_MULTIPATH_MAX_GIDS
// Byte offsets of SGIDCount and DGIDCount in a MultiPathRecord.
constexpr size_t kSgidCountOffset = 15;
constexpr size_t kDgidCountOffset = 16;

// All of `bits` set in `mask`.
bool has(uint64_t mask, uint64_t bits);
// A GID that names a port of this subnet (see answer.cpp).
bool names_local_port(const FabricModel& fabric, const sa::Gid& gid);
// The requester may learn paths between these ends (shares a partition with both).
bool requester_allowed(const AnswerContext& ctx, Endpoint source, Endpoint destination);
sa::SaMad response_to(const sa::SaMad& request, uint8_t method, uint16_t status);
uint16_t records_offset(const std::vector<sa::PathRecord>& records);
sa::SaMad error_response(const sa::SaMad& request, uint16_t status);
uint16_t request_status(const PathRequest& request);
// `levels`: the pair's (null: matched inside).
LidOffsets dlid_offsets(const AnswerContext& ctx, const PathRequest& request, Endpoint source,
                        Endpoint destination, const PairLevels* levels);

// What one answer may still spend (AnswerContext::limits), and the bound that cut it.
class Budget {
 public:
  // `table`: the answer is a table (GetTable, GetMulti), which max_records bounds.
  Budget(const AnswerLimits& limits, bool table)
      : deadline_(limits.deadline), max_records_(table ? limits.max_records : 0) {}

  // One more port pair or LID combination looked at: false once past the deadline (the clock is
  // read at the first and then at every kDeadlineCheckEvery-th).
  bool visit() {
    if (!deadline_ || visits_++ % kDeadlineCheckEvery != 0) return true;
    if (std::chrono::steady_clock::now() < *deadline_) return true;
    cut_ = Bound::kTime;
    return false;
  }
  // `records` found so far: false once more than max_records.
  bool records(size_t records) {
    if (max_records_ == 0 || records <= max_records_) return true;
    cut_ = Bound::kRecords;
    return false;
  }
  std::optional<Bound> cut() const { return cut_; }

 private:
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  size_t max_records_ = 0;
  size_t visits_ = 0;
  std::optional<Bound> cut_;
};

sa::SaMad bounded_response(const AnswerContext& ctx, const sa::SaMad& request, Bound bound);
// The order port pairs are visited in: by source, then destination (MultiPathRecord, one open
// end), or by destination, then source (a PathRecord naming neither end: pr_rcv_process_world).
enum class PairOrder { kSourceMajor, kDestinationMajor };
std::vector<sa::PathRecord> path_records(const AnswerContext& ctx, const PathRequest& request,
                                         std::span<const Endpoint> sources,
                                         std::span<const Endpoint> destinations, size_t per_pair,
                                         size_t total, Budget& budget,
                                         PairOrder order = PairOrder::kSourceMajor);

// A MultiPathRecord request up to its ends (osm_mpr_rcv_process before any path is computed).
struct MultiPathRequest {
  std::optional<uint16_t> status;  // answered with this status
  bool drop = false;               // not answered at all (an unknown requester)
  PathRequest req;
  uint8_t numb_path = 0;
  std::vector<Endpoint> sources, destinations;
};

MultiPathRequest multipath_request(const AnswerContext& ctx, const sa::SaMad& request,
                                   const DecodedQuery& decoded);
std::optional<sa::SaMad> answer_multipath(const AnswerContext& ctx, const sa::SaMad& request,
                                          const DecodedQuery& decoded);
// The MultiPathRecord of `request` as OpenSM reads it: at most 11 GIDs, sources first.
std::optional<sa::MultiPathRecord> decode_multipath(const sa::SaMad& request);

}  // namespace rdmaqos::sad::detail
