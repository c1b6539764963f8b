// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PathRecord codec (layout: Documentation/sa-wire-format.md, IBA 15.2.5.16).
#include "rdma-qos/sa-client/path_record.h"

#include <fmt/format.h>

#include <algorithm>

#include "path_parameters.h"
#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sa {

using namespace wire;

Result<std::array<uint8_t, kPathRecordSize>> encode_path_record(const PathRecord& r) {
  if (auto error = detail::check_path_parameters(r)) return *error;
  std::array<uint8_t, kPathRecordSize> out{};
  uint8_t* p = out.data();
  put64(p, r.service_id);
  std::copy(r.dgid.begin(), r.dgid.end(), p + 8);
  std::copy(r.sgid.begin(), r.sgid.end(), p + 24);
  put16(p + 40, r.dlid);
  put16(p + 42, r.slid);
  detail::put_path_parameters(p + 44, r);
  p[57] = r.preference;
  return out;
}

Result<PathRecord> decode_path_record(std::span<const uint8_t> bytes) {
  if (bytes.size() < kPathRecordSize)
    return make_error(ErrorCode::kTruncated, fmt::format("PathRecord of {} bytes (needs {})",
                                                         bytes.size(), kPathRecordSize));
  const uint8_t* p = bytes.data();
  PathRecord r;
  r.service_id = get64(p);
  std::copy(p + 8, p + 24, r.dgid.begin());
  std::copy(p + 24, p + 40, r.sgid.begin());
  r.dlid = get16(p + 40);
  r.slid = get16(p + 42);
  detail::get_path_parameters(p + 44, r);
  r.preference = p[57];
  return r;
}

}  // namespace rdmaqos::sa
