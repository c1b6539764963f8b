// libFuzzer target for the RESOLVE request decoder (and the reply and SET_TIMEOUT decoders):
// arbitrary bytes from the netlink socket yield a request or an error, never a crash or an
// over-read; a decoded request re-encodes to bytes that decode to the same request, and its SA
// query always encodes.
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
    auto paths = kmod::reply_paths(*req, records);
    if (!kmod::encode_resolve_reply(req->seq, paths)) __builtin_trap();
  }
  if (auto reply = kmod::decode_resolve_reply(bytes))
    if (!kmod::encode_resolve_reply(reply->header.seq, reply->paths)) __builtin_trap();
  (void)kmod::decode_set_timeout(bytes);
  return 0;
}
