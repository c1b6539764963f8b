// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target for the RESOLVE request decoder (and the reply, SET_TIMEOUT and ACK decoders):
// arbitrary bytes from the netlink socket yield a request or an error, never a crash or an
// over-read; a decoded request re-encodes to bytes that decode to the same request, and its SA
// query (and the reverse one) always encodes, with the GMP record first in at most three.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdma-qos/kmod-shim/ls_codec.h"

using namespace rdmaqos;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  (void)kmod::peek_header(bytes);
  if (auto req = kmod::decode_resolve_request(bytes)) {
    auto again = kmod::decode_resolve_request(kmod::encode_resolve_request(*req));
    if (!again || !(*again == *req)) __builtin_trap();
    if (!sa::encode_path_record(kmod::to_path_query(*req).record)) __builtin_trap();
    std::vector<sa::PathRecord> records = {kmod::to_path_query(*req).record};
    std::vector<sa::PathRecord> reverse;
    if (auto rq = kmod::to_reverse_path_query(*req)) {
      if (!sa::encode_path_record(rq->record)) __builtin_trap();
      reverse.push_back(rq->record);
    }
    auto paths = kmod::reply_paths(*req, records, reverse);
    // GMP first, at most 3 records (what the kernel takes).
    if (paths.empty() || paths.size() > 3) __builtin_trap();
    if (req->path_use != kmod::PathUse::kUnidirectional &&
        !(paths[0].flags & kmod::path_flags::kGmp))
      __builtin_trap();
    if (!kmod::encode_resolve_reply(req->seq, paths)) __builtin_trap();
  }
  if (auto reply = kmod::decode_resolve_reply(bytes))
    if (!kmod::encode_resolve_reply(reply->header.seq, reply->paths)) __builtin_trap();
  kmod::decode_set_timeout(bytes).ignore_error();
  kmod::decode_ack(bytes).ignore_error();  // the kernel's NLMSG_ERROR arrives on the same socket
  return 0;
}
