// InfiniBand route resolution through the SA: the PathRecord query with the policy's inputs,
// the answer installed as the id's route (see cm_layer.h resolve_ib).
#include <netinet/in.h>

#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "cm_layer.h"
#include "log.h"
#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/sa_client.h"
#include "real_calls.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::IdRegistry;

// One SA client per (device, port), opened on first use and kept for the process.
rdma_qos_sa_client* sa_client(rdma_cm_id* id, const CmConfig& c) {
  static std::mutex mutex;
  static auto* clients = new std::map<std::pair<std::string, int>, rdma_qos_sa_client*>;
  std::lock_guard lock(mutex);
  std::pair<std::string, int> key{ibv_get_device_name(id->verbs->device), id->port_num};
  auto it = clients->find(key);
  if (it != clients->end()) return it->second;
  rdma_qos_sa_options o = c.sa_options;
  o.ca = key.first.c_str();
  o.port = key.second;
  rdma_qos_sa_error err{};
  rdma_qos_sa_client* client = rdma_qos_sa_open(&o, &err);
  if (client == nullptr)
    log_once("sa_open", fmt::format("cannot reach the SA from {} port {} ({}); rdma_cm keeps the "
                                    "stock route resolution",
                                    key.first, key.second, err.message));
  (*clients)[key] = client;  // a failure is remembered too: no retry per connection
  return client;
}

// rdma_qos_sa_set_thread_deadline for the length of one route resolution.
class SaDeadline {
 public:
  explicit SaDeadline(int budget_ms) { rdma_qos_sa_set_thread_deadline(budget_ms); }
  ~SaDeadline() { rdma_qos_sa_set_thread_deadline(0); }
  SaDeadline(const SaDeadline&) = delete;
  SaDeadline& operator=(const SaDeadline&) = delete;
};

std::string hex(uint64_t v) {
  return fmt::format("0x{:x}", v);
}

std::string opt(const auto& v) {
  return v ? fmt::format("{}", static_cast<unsigned>(*v)) : "null";
}

}  // namespace

// The SA may take no longer than the program gave rdma_resolve_route (`timeout_ms`), so a
// silent SA costs a connection at most what the kernel's own query would have.
bool resolve_ib(rdma_cm_id* id, int timeout_ms) {
  const CmConfig& c = cm_config();
  if (c.sa == CmConfig::Sa::kOff || !is_infiniband(id)) return false;
  rdma_qos_sa_client* client = sa_client(id, c);
  if (client == nullptr) return false;
  rdmacm::IdState st = IdRegistry::instance().get(id);
  rdmacm::IbRouteInputs in;
  in.sgid = id->route.addr.addr.ibaddr.sgid;
  in.dgid = id->route.addr.addr.ibaddr.dgid;
  in.pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  in.service_id =
      rdmacm::effective_service_id(id->ps, &id->route.addr.dst_addr, st.inputs, c.settings);
  in.qos_class = rdmacm::effective_qos_class(st.inputs, c.settings);
  if (id->route.addr.src_addr.sa_family == AF_INET6) {
    uint32_t flowinfo = ntohl(id->route.addr.src_sin6.sin6_flowinfo);
    if ((flowinfo >> 20) & 0xFF) in.tclass = static_cast<uint8_t>(flowinfo >> 20);
  }
  rdmacm::IbRouteOps ops;
  ops.sa_qos_supported = [client] {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_qos_supported(client, &err);
  };
  ops.path_query = [client](const rdmacm::PathQuery& q, ibv_path_record* answer) {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_path_query(client, &q.record, q.comp_mask, answer, 1, &err);
  };
  ops.sa_mpr_supported = [client] {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_mpr_supported(client, &err);
  };
  ops.multipath_query = [client](const rdmacm::PathQuery& q, ibv_path_record* answer) {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_multipath_query(client, &q.record, q.comp_mask, answer, 1, &err);
  };
  ops.set_path = [id](ibv_path_data* data, size_t len) {
    auto set = real_rdmacm().set_option;
    return set == nullptr ? -1 : set(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, data, len);
  };
  ops.consume_route_resolved = [id] {
    const RdmacmCalls& real = real_rdmacm();
    rdma_cm_event* ev = nullptr;
    if (real.get_cm_event == nullptr || real.ack_cm_event == nullptr ||
        real.get_cm_event(id->channel, &ev) != 0)
      return -1;
    bool ok = ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && ev->status == 0;
    real.ack_cm_event(ev);
    return ok ? 0 : -1;
  };
  rdmacm::IbRouteResult r;
  {
    SaDeadline bound(timeout_ms);
    r = rdmacm::resolve_ib_route(in, st.synchronous, ops, c.mpr);
  }
  if (!r.note.empty())
    log_once_at(c.sa == CmConfig::Sa::kOn ? LogLevel::kWarn : LogLevel::kInfo, "ib_mpr:" + r.note,
                r.note);
  if (!r.installed) {
    // Once per reason and process, under auto and on alike: the program goes on with the
    // kernel's route resolution, which knows nothing of the policy.
    log_once("ib_fallback:" + r.why, r.why + "; the kernel's route resolution is used");
    if (log_enabled(LogLevel::kDebug))
      log_at(LogLevel::kDebug,
             fmt::format("InfiniBand: Service-ID {} fell back: {}", hex(in.service_id), r.why));
    record_decision(c, "rdma_resolve_route", std::nullopt, in.service_id, in.qos_class,
                    std::nullopt, nullptr);
    return false;
  }
  if (!r.why.empty()) log_once("ib_sync", r.why);
  // rdma_qos_query answers on InfiniBand too: the SA's SL, MTU and rate.
  rdmacm::CmDecision d = rdmacm::decision_from_path(*r.path, in.service_id, in.qos_class);
  IdRegistry::instance().set_decision(id, d);
  // Formatted only when it will be printed: this runs once per connection.
  if (log_enabled(LogLevel::kDebug))
    log_at(LogLevel::kDebug,
           fmt::format("InfiniBand: Service-ID {} QoS-Class {}: the SA answered SL {} MTU code {} "
                       "rate code {}{}",
                       hex(in.service_id), in.qos_class ? fmt::format("{}", *in.qos_class) : "none",
                       d.sl, opt(d.mtu_limit), opt(d.rate_limit),
                       r.multipath ? " (MultiPathRecord)" : ""));
  record_decision(c, "rdma_resolve_route", d, in.service_id, in.qos_class, std::nullopt, nullptr);
  return true;
}

}  // namespace rdmaqos::preload
