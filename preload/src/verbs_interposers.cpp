// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs interposers: ibv_modify_qp, ibv_create_ah and ibv_destroy_qp in unmodified programs
// (LD_PRELOAD, see rdma-qos-run). An unversioned definition here wins over libibverbs' versioned
// one, for the program and for librdmacm alike. The decisions are the providers core's
// (verbs_interposer.h); this file wires it to the real functions and the devices. Nothing may
// escape: on any failure it logs once and calls the real function as the program asked.
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "cm_layer.h"
#include "config.h"
#include "log.h"
#include "plain_verbs.h"
#include "ports.h"
#include "rdma-qos/providers/verbs_interposer.h"
#include "real_calls.h"
#include "test_record.h"

namespace rdmaqos::preload {
namespace {

constexpr const char* kNoSaClient = "the port cannot reach an SA now";

rdmaqos::Result<std::shared_ptr<sa::PortPaths>> client_of(const PlainVerbsInputs& in) {
  if (auto client = port_sa_client(in.device, in.port, cm_config())) return client;
  return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, kNoSaClient);
}

// The decider's warnings, but for a port without an SA client: port_sa_client said why (the
// umad error) and that plain-verbs QPs keep the stock path, so one failure is one line.
void log_decider_once(const std::string& key, const std::string& message) noexcept {
  if (key.ends_with(kNoSaClient)) return;
  log_once(key, message);
}

// The plain-verbs decider over this process's SA clients and host policy.
PlainVerbsDecider* make_decider(const config::HostConfig& c) {
  const CmConfig& cm = cm_config();
  PlainVerbsOptions o;
  o.settings = &cm.settings;
  o.query_sa = cm.sa != CmConfig::Sa::kOff;
  o.wait = std::chrono::milliseconds(c.number("verbs_sa_wait_ms"));
  o.ttl = std::chrono::seconds(c.number("cache_ttl"));
  PlainVerbsOps ops;
  ops.log_once = &log_decider_once;
  ops.qos_supported = [](const PlainVerbsInputs& in, sa::Deadline d) -> rdmaqos::Result<bool> {
    auto client = client_of(in);
    if (!client) return client.error();
    return (*client)->qos_supported(d);
  };
  ops.path_query = [](const PlainVerbsInputs& in, const sa::PathQuery& q,
                      sa::Deadline d) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
    auto client = client_of(in);
    if (!client) return client.error();
    return (*client)->path_records(q, d);
  };
  return new PlainVerbsDecider(o, std::move(ops));
}

// What the module knows of a plain-verbs QP at RTR (or an address handle): its port's LID and
// P_Key, the destination, the program's class and Service-ID.
PlainVerbsInputs inputs_of(const providers::PlainVerbsTarget& t) {
  const CmConfig& cm = cm_config();
  PlainVerbsInputs in;
  in.device = t.context != nullptr && t.context->device != nullptr ? t.context->device->name : "";
  in.port = t.port;
  in.link = t.link;
  in.qos_class = cm.settings.qos_class;
  in.service_id = cm.settings.service_id;
  if (t.link == providers::LinkKind::kInfiniBand) {
    // Only a query needs them: on RoCE the policy matches the default P_Key.
    in.dlid = t.ah->dlid;
    if (uint16_t lid = port_lid(t.context, t.port))
      in.slid = static_cast<uint16_t>(lid | t.ah->src_path_bits);
    in.pkey = port_pkey(t.context, t.port, t.pkey_index);
  }
  return in;
}

// Loaded on first use, once: the host configuration and the environment.
const providers::InterposerHooks& hooks() {
  static providers::InterposerHooks* h = [] {
    auto* out = new providers::InterposerHooks;
    out->log_once = &log_once;
    out->probe.link_kind = &link_kind;
    out->probe.qp_port = &qp_port;
    out->probe.qp_pkey_index = &qp_pkey_index;
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
      out->program_values = c.text("verbs_values") == "replace" ? providers::ProgramValues::kReplace
                                                                : providers::ProgramValues::kKeep;
      PlainVerbsDecider* decider = make_decider(c);  // lives as long as the process
      out->plain_verbs = [decider](const providers::PlainVerbsTarget& t) {
        return decider->decide(inputs_of(t));
      };
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
  if (qp != nullptr && attr != nullptr && rdmaqos::providers::modify_qp_is_bookkeeping(*attr, mask))
    return next(qp, attr, mask);
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
  return rdmaqos::providers::interpose_destroy_qp(qp, next);
}

}  // extern "C"
