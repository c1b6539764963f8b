// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs interposers: ibv_modify_qp, ibv_create_ah and ibv_destroy_qp in unmodified programs
// (LD_PRELOAD, see rdma-qos-run). An unversioned definition here wins over libibverbs' versioned
// one, for the program and for librdmacm alike. The decisions are the providers core's
// (verbs_interposer.h); this file wires it to the real functions and the devices. Nothing may
// escape: on any failure it logs once and calls the real function as the program asked.
#include <infiniband/verbs.h>

#include <cerrno>
#include <string>

#include "config.h"
#include "log.h"
#include "ports.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/providers/verbs_interposer.h"
#include "real_calls.h"
#include "test_record.h"

namespace rdmaqos::preload {
namespace {

// Loaded on first use, once: the host configuration and the environment.
const providers::InterposerHooks& hooks() {
  static providers::InterposerHooks* h = [] {
    auto* out = new providers::InterposerHooks;
    out->log_once = &log_once;
    out->probe.link_kind = &link_kind;
    out->probe.qp_port = &qp_port;
    out->rate_limit = [](ibv_qp* qp, uint32_t kbps) {
      ibv_qp_rate_limit_attr a{};
      a.rate_limit = kbps;
      return ibv_modify_qp_rate_limit(qp, &a);
    };
    try {
      const config::HostConfig* loaded = preload_config();
      if (loaded == nullptr) return out;
      const auto& c = *loaded;
      out->settings = providers::verbs_settings_from(c.text("flow_label"), c.text("sl"),
                                                     c.text("tclass"), c.text("apply_on_ib"));
      std::string record_path = c.text("test_record");
      if (!record_path.empty())
        out->record = [record_path](const std::string& line) { append_record(record_path, line); };
    } catch (...) {
      log_once("config", "cannot load the host configuration; using defaults");
    }
    return out;
  }();
  return *h;
}

}  // namespace
}  // namespace rdmaqos::preload

using rdmaqos::preload::log_once;
using rdmaqos::preload::real_verbs;

extern "C" {

__attribute__((visibility("default"))) int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  auto next = real_verbs().modify_qp;
  if (next == nullptr) return EOPNOTSUPP;  // no libibverbs behind us: nothing could succeed
  rdmaqos::providers::ModifyQpCall call(next, qp, attr, mask);
  try {
    return rdmaqos::providers::interpose_modify_qp(call, rdmaqos::preload::hooks());
  } catch (...) {
    log_once("modify_qp_exception", "internal error in ibv_modify_qp; QPs left unchanged");
    return call.finish();  // the provider's answer, if it already gave one
  }
}

__attribute__((visibility("default"))) ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  auto next = real_verbs().create_ah;
  if (next == nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  rdmaqos::providers::CreateAhCall call(next, pd, attr);
  try {
    return rdmaqos::providers::interpose_create_ah(call, rdmaqos::preload::hooks());
  } catch (...) {
    log_once("create_ah_exception", "internal error in ibv_create_ah; AHs left unchanged");
    return call.finish();  // the provider's answer, if it already gave one
  }
}

__attribute__((visibility("default"))) int ibv_destroy_qp(ibv_qp* qp) {
  auto next = real_verbs().destroy_qp;
  if (next == nullptr) return EOPNOTSUPP;
  int rc = next(qp);
  if (rc == 0) {
    try {
      rdmaqos::providers::QpRegistry::instance().erase(qp);
    } catch (...) {
    }
  }
  return rc;
}

}  // extern "C"
