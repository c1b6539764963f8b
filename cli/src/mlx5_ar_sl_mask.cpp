// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The adaptive-routing SL mask of the host's mlx5 InfiniBand ports, read as UCX reads it: the
// ooo_sl_mask field of QUERY_HCA_VPORT_CONTEXT, a DEVX general command that any user who may
// open the device can send. libmlx5 is opened at run time, so rdma-qos runs where it is absent.
#include <dlfcn.h>
#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstring>
#include <memory>

#include "port_checks.h"

namespace rdmaqos::cli {
namespace {

// Command opcodes and bit offsets of the fields read, from the mlx5 programming interface as
// Linux's include/linux/mlx5/mlx5_ifc.h lays it out (offsets from the start of the command's
// output, which carries an 0x80-bit header).
constexpr uint16_t kQueryHcaCap = 0x100;
constexpr uint16_t kQueryHcaCapGeneralCurrent = 1;  // op_mod: general capabilities, current
constexpr uint16_t kQueryHcaVportContext = 0x762;
constexpr size_t kQueryHcaCapOutBytes = 0x8080 / 8;
constexpr size_t kQueryHcaVportContextOutBytes = 0x1060 / 8;
constexpr unsigned kCapOooSlMaskBit = 0x80 + 0x138;    // cmd_hca_cap.ooo_sl_mask, 1 bit
constexpr unsigned kVportOooSlMaskBit = 0x80 + 0x290;  // hca_vport_context.ooo_sl_mask, 16

// A big-endian bit field of at most 32 bits that does not cross a 32-bit word.
uint32_t field(const uint8_t* buf, unsigned bit, unsigned width) {
  uint32_t word = 0;
  std::memcpy(&word, buf + bit / 32 * 4, sizeof word);
  const unsigned shift = 32 - bit % 32 - width;
  return (be32toh(word) >> shift) & (width == 32 ? ~0U : (1U << width) - 1);
}

// Command input: opcode in bits 0..15, op_mod in 48..63 (big-endian).
std::array<uint8_t, 16> command(uint16_t opcode, uint16_t op_mod) {
  std::array<uint8_t, 16> in{};
  const uint32_t w0 = htobe32(static_cast<uint32_t>(opcode) << 16);
  const uint32_t w1 = htobe32(op_mod);
  std::memcpy(in.data(), &w0, 4);
  std::memcpy(in.data() + 4, &w1, 4);
  return in;
}

struct Mlx5Calls {
  bool (*is_supported)(ibv_device*) = nullptr;
  ibv_context* (*open_device)(ibv_device*, mlx5dv_context_attr*) = nullptr;
  int (*general_cmd)(ibv_context*, const void*, size_t, void*, size_t) = nullptr;
};

// libmlx5's entry points, looked up once; nullptr when the library or one of them is missing.
const Mlx5Calls* mlx5_calls() {
  static const Mlx5Calls calls = [] {
    Mlx5Calls c;
    void* lib = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return c;
    c.is_supported = reinterpret_cast<decltype(c.is_supported)>(dlsym(lib, "mlx5dv_is_supported"));
    c.open_device = reinterpret_cast<decltype(c.open_device)>(dlsym(lib, "mlx5dv_open_device"));
    c.general_cmd =
        reinterpret_cast<decltype(c.general_cmd)>(dlsym(lib, "mlx5dv_devx_general_cmd"));
    return c;
  }();
  if (calls.is_supported == nullptr || calls.open_device == nullptr || calls.general_cmd == nullptr)
    return nullptr;
  return &calls;
}

bool run(const Mlx5Calls& m, ibv_context* ctx, const void* in, size_t in_bytes, uint8_t* out,
         size_t out_bytes) {
  return m.general_cmd(ctx, in, in_bytes, out, out_bytes) == 0 && field(out, 0, 8) == 0;
}

void read_device(const Mlx5Calls& m, ibv_device* device, std::vector<ArSlMask>& out) {
  if (!m.is_supported(device)) return;
  mlx5dv_context_attr attr{};
  attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
  std::unique_ptr<ibv_context, int (*)(ibv_context*)> ctx(m.open_device(device, &attr),
                                                          ibv_close_device);
  if (!ctx) return;  // no DEVX on this kernel or device
  std::vector<uint8_t> cap(kQueryHcaCapOutBytes);
  const auto cap_in = command(kQueryHcaCap, kQueryHcaCapGeneralCurrent);
  if (!run(m, ctx.get(), cap_in.data(), cap_in.size(), cap.data(), cap.size()) ||
      field(cap.data(), kCapOooSlMaskBit, 1) == 0)
    return;  // the HCA keeps no adaptive-routing SL mask
  ibv_device_attr dev_attr{};
  if (ibv_query_device(ctx.get(), &dev_attr) != 0) return;
  for (int port = 1; port <= dev_attr.phys_port_cnt; ++port) {
    ibv_port_attr port_attr{};
    if (ibv_query_port(ctx.get(), static_cast<uint8_t>(port), &port_attr) != 0 ||
        port_attr.link_layer != IBV_LINK_LAYER_INFINIBAND || port_attr.state != IBV_PORT_ACTIVE)
      continue;
    auto in = command(kQueryHcaVportContext, 0);
    const uint32_t port_word = htobe32(static_cast<uint32_t>(port) << 16);  // port_num, 4 bits
    std::memcpy(in.data() + 8, &port_word, 4);
    std::vector<uint8_t> vport(kQueryHcaVportContextOutBytes);
    if (!run(m, ctx.get(), in.data(), in.size(), vport.data(), vport.size())) continue;
    out.push_back({ibv_get_device_name(device), port,
                   static_cast<uint16_t>(field(vport.data(), kVportOooSlMaskBit, 16))});
  }
}

}  // namespace

std::vector<ArSlMask> read_mlx5_ar_sl_masks() {
  std::vector<ArSlMask> out;
  const Mlx5Calls* m = mlx5_calls();
  if (m == nullptr) return out;
  int n = 0;
  std::unique_ptr<ibv_device*[], void (*)(ibv_device**)> list(ibv_get_device_list(&n),
                                                              ibv_free_device_list);
  if (!list) return out;
  for (int i = 0; i < n; ++i) read_device(*m, list[i], out);
  return out;
}

}  // namespace rdmaqos::cli
