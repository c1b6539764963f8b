// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SMP payload decoders under libFuzzer: any bytes a node answers decode (or are refused
// when short) without reading past them, and re-encode to what was read.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rdma-qos/fabric/tables.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmaqos::fabric;
  std::span<const uint8_t> in(data, size);
  auto info = decode_port_info(in);
  auto sl2vl = decode_sl2vl(in);
  auto vlarb = decode_vlarb_block(in);
  auto pkeys = decode_pkey_block(in);
  if ((size < kSmpDataSize) != !info) std::abort();
  if ((size < kSmpDataSize) != !pkeys) std::abort();
  if (pkeys) {
    if (pkeys->size() > kPKeyBlockEntries) std::abort();
    for (size_t i = 0; i < pkeys->size(); ++i)
      if ((*pkeys)[i] == 0 || (*pkeys)[i] > 0x7FFF || (i > 0 && (*pkeys)[i - 1] >= (*pkeys)[i]))
        std::abort();
  }
  if (sl2vl) {
    auto back = encode_sl2vl(*sl2vl);
    for (size_t i = 0; i < 8; ++i)
      if (back[i] != data[i]) std::abort();
  }
  if (vlarb) {
    auto back = encode_vlarb_block(*vlarb, 0);
    for (size_t i = 0; i < kSmpDataSize; i += 2)
      if (back[i] != (data[i] & 0xF) || back[i + 1] != data[i + 1]) std::abort();
    (void)port_info_with_high_limit(in, 1);
  }
  return 0;
}
