// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for every response decoder: arbitrary bytes must yield a value or an
// error, never a crash, an over-read or undefined behaviour. Decoded values must re-encode.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-client/path_record.h"

using namespace rdmaqos::sa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  if (auto mad = decode_sa_mad(bytes)) {
    if (auto records = response_records(*mad, kPathRecordSize))
      for (auto r : *records)
        if (auto pr = decode_path_record(r))
          if (!encode_path_record(*pr)) __builtin_trap();
    decode_class_port_info(mad->data).ignore_error();
    decode_multipath_record(mad->data).ignore_error();
    (void)mad_status_name(mad->mad.status);
  }
  if (auto mpr = decode_multipath_record(bytes))
    if (!encode_multipath_record(*mpr)) __builtin_trap();
  if (auto cpi = decode_class_port_info(bytes))
    if (!encode_class_port_info(*cpi)) __builtin_trap();
  return 0;
}
