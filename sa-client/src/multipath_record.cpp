// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MultiPathRecord codec (layout: Documentation/sa-wire-format.md, IBA 15.2.5.20).
#include "rdma-qos/sa-client/multipath_record.h"

#include <fmt/format.h>

#include <algorithm>

#include "path_parameters.h"
#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {

using namespace wire;

namespace {

constexpr size_t kMaxGids = 255;

}  // namespace

Result<std::vector<uint8_t>> encode_multipath_record(const MultiPathRecord& r) {
  if (auto error = detail::check_path_parameters(r)) return *error;
  if (r.independence_selector > 3)
    return detail::too_wide("independence selector", r.independence_selector, 2);
  if (r.sgids.size() > kMaxGids || r.dgids.size() > kMaxGids)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{} SGIDs and {} DGIDs: at most {} each", r.sgids.size(),
                                  r.dgids.size(), kMaxGids));
  std::vector<uint8_t> out(kMultiPathRecordFixedSize + 16 * (r.sgids.size() + r.dgids.size()), 0);
  uint8_t* p = out.data();
  detail::put_path_parameters(p, r);
  p[13] = static_cast<uint8_t>(r.service_id >> 56);
  p[14] = r.independence_selector;
  p[15] = static_cast<uint8_t>(r.sgids.size());
  p[16] = static_cast<uint8_t>(r.dgids.size());
  for (int i = 0; i < 7; ++i) p[17 + i] = static_cast<uint8_t>(r.service_id >> (8 * (6 - i)));
  uint8_t* g = p + kMultiPathRecordFixedSize;
  for (const Gid& gid : r.sgids) g = std::copy(gid.begin(), gid.end(), g);
  for (const Gid& gid : r.dgids) g = std::copy(gid.begin(), gid.end(), g);
  return out;
}

Result<MultiPathRecord> decode_multipath_record(std::span<const uint8_t> bytes) {
  if (bytes.size() < kMultiPathRecordFixedSize)
    return make_error(ErrorCode::kTruncated,
                      fmt::format("MultiPathRecord of {} bytes (needs at least {})", bytes.size(),
                                  kMultiPathRecordFixedSize));
  const uint8_t* p = bytes.data();
  MultiPathRecord r;
  detail::get_path_parameters(p, r);
  r.service_id = uint64_t{p[13]} << 56;
  for (int i = 0; i < 7; ++i) r.service_id |= uint64_t{p[17 + i]} << (8 * (6 - i));
  r.independence_selector = p[14] & 0x3;
  size_t sgids = p[15], dgids = p[16];
  size_t need = kMultiPathRecordFixedSize + 16 * (sgids + dgids);
  if (bytes.size() < need)
    return make_error(ErrorCode::kTruncated,
                      fmt::format("MultiPathRecord announces {} SGIDs and {} DGIDs ({} bytes) but "
                                  "has {} bytes",
                                  sgids, dgids, need, bytes.size()));
  const uint8_t* g = p + kMultiPathRecordFixedSize;
  auto take = [&g] {
    Gid gid{};
    std::copy(g, g + 16, gid.begin());
    g += 16;
    return gid;
  };
  for (size_t i = 0; i < sgids; ++i) r.sgids.push_back(take());
  for (size_t i = 0; i < dgids; ++i) r.dgids.push_back(take());
  return r;
}

}  // namespace rdmaqos::sa
