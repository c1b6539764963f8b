// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The public C API (rdma_qos.h) over the per-id registry. Nothing here throws across the C
// boundary: every entry point catches and reports failure through errno.
#include "rdma-qos/rdmacm-qos/rdma_qos.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdma-qos/rdmacm-qos/cm_qos.h"

using rdmaqos::rdmacm::IdRegistry;

namespace {
int fail(int err) {
  errno = err;
  return -1;
}
}  // namespace

// The shared library builds with hidden visibility: the API is what it exports.
#pragma GCC visibility push(default)
extern "C" {

int rdma_qos_set_class(struct rdma_cm_id* id, uint16_t qos_class) {
  if (id == nullptr || qos_class > 0xFFF) return fail(EINVAL);
  try {
    IdRegistry::instance().set_class(id, qos_class);
    return 0;
  } catch (...) {
    return fail(ENOMEM);
  }
}

int rdma_qos_set_service_id(struct rdma_cm_id* id, uint64_t service_id) {
  if (id == nullptr) return fail(EINVAL);
  try {
    IdRegistry::instance().set_service_id(id, service_id);
    return 0;
  } catch (...) {
    return fail(ENOMEM);
  }
}

int rdma_qos_get_class(struct rdma_cm_id* id, uint16_t* qos_class) {
  if (id == nullptr || qos_class == nullptr) return fail(EINVAL);
  try {
    auto s = IdRegistry::instance().get(id);
    if (!s.inputs.class_override) return fail(ENOENT);
    *qos_class = *s.inputs.class_override;
    return 0;
  } catch (...) {
    return fail(ENOMEM);
  }
}

int rdma_qos_get_service_id(struct rdma_cm_id* id, uint64_t* service_id) {
  if (id == nullptr || service_id == nullptr) return fail(EINVAL);
  try {
    auto s = IdRegistry::instance().get(id);
    if (!s.inputs.service_id_override) return fail(ENOENT);
    *service_id = *s.inputs.service_id_override;
    return 0;
  } catch (...) {
    return fail(ENOMEM);
  }
}

int rdma_qos_query(struct rdma_cm_id* id, struct rdma_qos_decision* out) {
  if (id == nullptr || out == nullptr) return fail(EINVAL);
  try {
    auto s = IdRegistry::instance().get(id);
    if (!s.decision) return fail(ENOENT);
    const auto& d = *s.decision;
    std::memset(out, 0, sizeof(*out));
    out->service_id = d.service_id;
    out->has_qos_class = d.qos_class.has_value();
    out->qos_class = d.qos_class.value_or(0);
    out->sl = d.sl;
    out->has_traffic_class = d.traffic_class.has_value();
    out->traffic_class = d.traffic_class.value_or(0);
    out->has_mtu_limit = d.mtu_limit.has_value();
    out->mtu_limit = d.mtu_limit.value_or(0);
    out->has_rate_limit = d.rate_limit.has_value();
    out->rate_limit = d.rate_limit.value_or(0);
    out->rule = d.rule ? static_cast<int32_t>(*d.rule) : -1;
    const size_t n = std::min(d.level.size(), sizeof(out->level) - 1);
    std::memcpy(out->level, d.level.data(), n);
    out->level[n] = '\0';
    return 0;
  } catch (...) {
    return fail(ENOMEM);
  }
}

const char* rdma_qos_version(void) {
  return RDMA_QOS_VERSION;
}

}  // extern "C"
#pragma GCC visibility pop
