// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for the node path service's decoders: rdma-qos-lsd decodes questions from any
// local user, the preload module answers from the service. Arbitrary bytes must yield a value or
// an error, never a crash or an over-read; what decodes must encode again.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdma-qos/sa-client/path_service_wire.h"

using namespace rdmaqos::sa::path_service;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  if (auto q = decode_question(bytes)) {
    if (!encode_question(*q)) __builtin_trap();
  }
  if (auto a = decode_answer(bytes)) {
    if (!encode_answer(*a)) __builtin_trap();
    a->paths.ignore_error();
    a->class_port_info.ignore_error();
  }
  return 0;
}
