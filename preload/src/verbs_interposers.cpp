// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs interposers: ibv_modify_qp, ibv_create_ah and ibv_destroy_qp in unmodified programs
// (LD_PRELOAD, see rdma-qos-run). An unversioned definition here wins over libibverbs' versioned
// one, for the program and for librdmacm alike. The decisions are the providers core's
// (verbs_interposer.h); this file wires it to the real functions and the devices. Nothing may
// escape: on any failure it logs once and calls the real function as the program asked.
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The SA of a plain-verbs decision: this process's client of the QP's port.
class ModulePlainVerbsSa final : public PlainVerbsSa {
 public:
  rdmaqos::Result<bool> qos_supported(const PlainVerbsInputs& in, sa::Deadline d) override {
    auto client = client_of(in);
    if (!client) return client.error();
    return (*client)->qos_supported(d);
  }
  rdmaqos::Result<std::vector<sa::PathRecord>> path_query(const PlainVerbsInputs& in,
                                                          const sa::PathQuery& q,
                                                          sa::Deadline d) override {
    auto client = client_of(in);
    if (!client) return client.error();
    return (*client)->path_records(q, d);
  }
  void log_once(const std::string& key, const std::string& message) override {
    log_decider_once(key, message);
  }
};

// The plain-verbs decider over this process's SA clients and host policy.
PlainVerbsDecider* make_decider(const config::HostConfig& c) {
  const CmConfig& cm = cm_config();
  PlainVerbsOptions o;
  o.settings = &cm.settings;
  o.query_sa = cm.sa != CmConfig::Sa::kOff;
  o.wait = std::chrono::milliseconds(c.number("verbs_sa_wait_ms"));
  o.ttl = std::chrono::seconds(c.number("cache_ttl"));
  return new PlainVerbsDecider(o, std::make_unique<ModulePlainVerbsSa>());
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

// The module as the interposer's host: the devices (ports.h), the plain-verbs decider over this
// process's SA clients and host policy, the log, and the configuration read once.
class ModuleVerbsHost final : public providers::VerbsHost {
 public:
  ModuleVerbsHost() {
    try {
      const config::HostConfig* loaded = preload_config();
      if (loaded == nullptr) return;
      const auto& c = *loaded;
      settings_ = providers::verbs_settings_from(c.text("flow_label"), c.text("sl"),
                                                 c.text("tclass"), c.text("apply_on_ib"));
      values_ = c.text("verbs_values") == "replace" ? providers::ProgramValues::kReplace
                                                    : providers::ProgramValues::kKeep;
      decider_ = make_decider(c);  // lives as long as the process
      record_path_ = c.text("test_record");
    } catch (...) {
      rdmaqos::preload::log_once("config", "cannot load the host configuration; using defaults");
    }
  }
  const providers::VerbsSettings& settings() const override { return settings_; }
  providers::ProgramValues program_values() const override { return values_; }
  providers::LinkKind link_kind(ibv_context* context, uint8_t port, uint8_t sgid_index) override {
    return rdmaqos::preload::link_kind(context, port, sgid_index);
  }
  uint8_t qp_port(ibv_qp* qp) override { return rdmaqos::preload::qp_port(qp); }
  uint16_t qp_pkey_index(ibv_qp* qp) override { return rdmaqos::preload::qp_pkey_index(qp); }
  std::optional<providers::QosDecision> plain_verbs(
      const providers::PlainVerbsTarget& target) override {
    if (decider_ == nullptr) return std::nullopt;
    return decider_->decide(inputs_of(target));
  }
  int rate_limit(ibv_qp* qp, uint32_t kbps) override {
    ibv_qp_rate_limit_attr a{};
    a.rate_limit = kbps;
    return ibv_modify_qp_rate_limit(qp, &a);
  }
  void log_once(const std::string& key, const std::string& message) override {
    rdmaqos::preload::log_once(key, message);
  }
  bool recording() const override { return !record_path_.empty(); }
  void record(const std::string& json_line) override {
    if (!record_path_.empty()) append_record(record_path_, json_line);
  }

 private:
  providers::VerbsSettings settings_;
  providers::ProgramValues values_ = providers::ProgramValues::kKeep;
  PlainVerbsDecider* decider_ = nullptr;
  std::string record_path_;
};

// Made on first use, once, and never destroyed: interposed calls may come from other threads
// while the process exits.
providers::VerbsHost& host() {
  static ModuleVerbsHost* h = new ModuleVerbsHost;
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
    return rdmaqos::providers::interpose_modify_qp(call, rdmaqos::preload::host());
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
    return rdmaqos::providers::interpose_create_ah(call, rdmaqos::preload::host());
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
