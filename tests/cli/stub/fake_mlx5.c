// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A stand-in mlx5 HCA for `rdma-qos run-env`'s adaptive-routing SL check, where no mlx5 device
 * exists: built as libmlx5.so.1 and preloaded, so that run-env's dlopen("libmlx5.so.1") finds
 * this object (glibc matches the loaded soname) and its libibverbs calls see one device,
 * mlx5_0, with FAKE_MLX5_PORTS ports (default 1), each an active InfiniBand port.
 * mlx5dv_devx_general_cmd answers the two commands as the mlx5 programming interface lays them
 * out (Linux's include/linux/mlx5/mlx5_ifc.h): QUERY_HCA_CAP (opcode 0x100, op_mod 1, general
 * capabilities, current) with cmd_hca_cap.ooo_sl_mask (bit 0x138 of the capabilities) set unless
 * FAKE_MLX5_NO_OOO_CAP is set, and QUERY_HCA_VPORT_CONTEXT (opcode 0x762) of the port named in
 * its input (port_num, 4 bits at input bit 0x54) with hca_vport_context.ooo_sl_mask (16 bits at
 * context bit 0x290) = FAKE_MLX5_AR_SL_MASK (default 0). Both outputs start with the 0x80-bit
 * header (status 0). Any other command, or a port the device lacks, fails (EINVAL). Without
 * MLX5DV_CONTEXT_FLAGS_DEVX mlx5dv_open_device fails, as on a kernel without DEVX. */
#include <endian.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct ibv_device device = {.name = "mlx5_0", .transport_type = IBV_TRANSPORT_IB};

static int ports(void) {
  const char* n = getenv("FAKE_MLX5_PORTS");
  return n != NULL ? atoi(n) : 1;
}

static int fake_query_port(struct ibv_context* ctx, uint8_t port, struct ibv_port_attr* attr,
                           size_t len) {
  (void)ctx;
  if (port < 1 || port > ports()) return EINVAL;
  memset(attr, 0, len);
  attr->state = IBV_PORT_ACTIVE;
  attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
  return 0;
}

struct ibv_device** ibv_get_device_list(int* num) {
  struct ibv_device** list = calloc(2, sizeof(*list));
  if (list == NULL) return NULL;
  list[0] = &device;
  if (num != NULL) *num = 1;
  return list;
}

void ibv_free_device_list(struct ibv_device** list) {
  free(list);
}

const char* ibv_get_device_name(struct ibv_device* dev) {
  return dev->name;
}

int ibv_query_device(struct ibv_context* ctx, struct ibv_device_attr* attr) {
  (void)ctx;
  memset(attr, 0, sizeof(*attr));
  attr->phys_port_cnt = (uint8_t)ports();
  return 0;
}

int ibv_close_device(struct ibv_context* ctx) {
  free(verbs_get_ctx(ctx));
  return 0;
}

bool mlx5dv_is_supported(struct ibv_device* dev) {
  return dev == &device;
}

struct ibv_context* mlx5dv_open_device(struct ibv_device* dev, struct mlx5dv_context_attr* attr) {
  struct verbs_context* vctx;
  if (dev != &device || attr == NULL || !(attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX)) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  if ((vctx = calloc(1, sizeof(*vctx))) == NULL) return NULL;
  vctx->sz = sizeof(*vctx);
  vctx->query_port = fake_query_port;
  vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  vctx->context.device = dev;
  return &vctx->context;
}

static uint32_t in_word(const void* in, size_t index) {
  uint32_t w;
  memcpy(&w, (const uint8_t*)in + index * 4, 4);
  return be32toh(w);
}

/* Sets `width` bits (at most 16, within one byte pair) at bit `bit` of `out`, big-endian. */
static void set_bits(uint8_t* out, unsigned bit, unsigned width, uint32_t value) {
  for (unsigned i = 0; i < width; ++i)
    if (value >> (width - 1 - i) & 1) out[(bit + i) / 8] |= (uint8_t)(0x80 >> ((bit + i) % 8));
}

int mlx5dv_devx_general_cmd(struct ibv_context* ctx, const void* in, size_t inlen, void* out,
                            size_t outlen) {
  const unsigned header = 0x80;
  uint16_t opcode, op_mod;
  (void)ctx;
  if (inlen < 16) return EINVAL;
  opcode = (uint16_t)(in_word(in, 0) >> 16);
  op_mod = (uint16_t)in_word(in, 1);
  memset(out, 0, outlen);
  if (opcode == 0x100 && op_mod == 1 && outlen >= (header + 0x140) / 8) {
    if (getenv("FAKE_MLX5_NO_OOO_CAP") == NULL) set_bits(out, header + 0x138, 1, 1);
    return 0;
  }
  if (opcode == 0x762 && outlen >= (header + 0x2a0) / 8) {
    const int port = (int)(in_word(in, 2) >> 16 & 0xF);
    const char* mask = getenv("FAKE_MLX5_AR_SL_MASK");
    if (port < 1 || port > ports()) return EINVAL;
    set_bits(out, header + 0x290, 16, mask != NULL ? (uint32_t)strtoul(mask, NULL, 0) : 0);
    return 0;
  }
  return EINVAL;
}
