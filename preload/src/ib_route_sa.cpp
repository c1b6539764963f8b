// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA: the PathRecord query with the policy's inputs sent
// by the port's C++ SA client (sa::SharedClient, shared by the program's threads), the answer
// installed as the id's route (see cm_layer.h resolve_ib). The record is a value from the SA's
// answer to the kernel's wire layout; nothing goes through the C API.
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "cm_event_wait.h"
#include "cm_layer.h"
#include "ib_route_sa.h"
#include "log.h"
#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/shared_client.h"
#include "real_calls.h"
#include "retry_backoff.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::IdRegistry;

// A failed open is tried again after 1 s, then twice as long each time up to 30 s.
constexpr std::chrono::milliseconds kOpenRetryFirst{1000};
constexpr std::chrono::milliseconds kOpenRetryMax{30000};

struct PortSa {
  std::shared_ptr<sa::SharedClient> client;
  RetryBackoff open_retry{kOpenRetryFirst, kOpenRetryMax};
};

// The kernel raises ROUTE_RESOLVED for the path just set, with no round trip on the network:
// what is left of the program's budget, but never so little that an SA which used it all leaves
// the event behind for the id's next librdmacm call.
constexpr std::chrono::milliseconds kRouteEventFloor{100};

std::chrono::milliseconds route_event_wait(const sa::Deadline& deadline) {
  if (!deadline) return kRouteEventFloor;
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
  return std::max(left, kRouteEventFloor);
}

std::string hex(uint64_t v) {
  return fmt::format("0x{:x}", v);
}

std::string opt(const auto& v) {
  return v ? fmt::format("{}", static_cast<unsigned>(*v)) : "null";
}

// One SA client per (device, port), opened on first use and kept for the process; the map's
// lock is held only to find or open the port's client, never across a query. Both at namespace
// scope, the map made at load and never destroyed: no initialisation guard another thread could
// hold at fork time (fork_guard.cpp), nothing destroyed at exit while a thread still asks.
using PortSaMap = std::map<std::pair<std::string, int>, PortSa>;
std::mutex port_sa_mutex;
PortSaMap* port_sa_map = new PortSaMap;

}  // namespace

std::shared_ptr<sa::SharedClient> port_sa_client(const std::string& device, int port_num,
                                                 const CmConfig& c) {
  std::lock_guard lock(port_sa_mutex);
  std::pair<std::string, int> key{device, port_num};
  PortSa& port = (*port_sa_map)[key];
  if (port.client) return port.client;
  auto now = RetryBackoff::Clock::now();
  if (!port.open_retry.may_try(now)) return nullptr;
  sa::ClientOptions o = c.sa_options;
  o.port.ca = key.first;
  o.port.port = key.second;
  o.sa_lid = config::port_lid_of(c.sa_lids, key.first, static_cast<uint32_t>(key.second));
  auto opened = sa::SharedClient::open(o, c.path_cache ? &*c.path_cache : nullptr);
  if (opened) {
    port.client = std::move(*opened);
    port.open_retry.succeeded();
    return port.client;
  }
  log_once("sa_open:" + key.first + ":" + std::to_string(key.second),
           fmt::format("cannot reach the SA from {} port {} ({}); rdma_cm and plain-verbs QPs "
                       "keep the stock path, and the port is tried again after a back-off",
                       key.first, key.second, opened.error().message));
  port.open_retry.failed(now);
  return nullptr;
}

void lock_port_sa_clients_for_fork() {
  port_sa_mutex.lock();
}

void unlock_port_sa_clients_after_fork() {
  port_sa_mutex.unlock();
}

void reset_port_sa_clients_in_child() {
  // The parent's clients are the parent's: their umad agents answer its queries, and one may
  // be locked by a thread the child does not have. The child opens its own on first use; the
  // parent's are left as they are (not destroyed: their locks may be held).
  port_sa_map = new PortSaMap;
  port_sa_mutex.unlock();
}

// The SA may take no longer than the program gave rdma_resolve_route (`timeout_ms`), so a
// silent SA costs a connection at most what the kernel's own query would have.
bool resolve_ib(rdma_cm_id* id, int timeout_ms) {
  const CmConfig& c = cm_config();
  if (c.sa == CmConfig::Sa::kOff || !is_infiniband(id)) return false;
  std::shared_ptr<sa::SharedClient> client =
      port_sa_client(ibv_get_device_name(id->verbs->device), id->port_num, c);
  if (!client) return false;
  rdmacm::IdState st = IdRegistry::instance().get(id);
  rdmacm::IbRouteInputs in;
  in.sgid = rdmacm::gid_of(id->route.addr.addr.ibaddr.sgid);
  in.dgid = rdmacm::gid_of(id->route.addr.addr.ibaddr.dgid);
  in.pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  in.service_id =
      rdmacm::effective_service_id(id->ps, &id->route.addr.dst_addr, st.inputs, c.settings);
  in.qos_class = rdmacm::effective_qos_class(st.inputs, c.settings);
  // IPv6: the source address's traffic class is queried as the PathRecord's TClass, as the
  // kernel's own route query does.
  in.tclass = rdmacm::address_traffic_class(&id->route.addr.src_addr);
  // Every SA call of this resolution shares the program's budget for it.
  const sa::Deadline deadline = sa::deadline_after(std::chrono::milliseconds(timeout_ms));
  rdmacm::IbRouteOps ops;
  ops.sa_qos_supported = [&] { return client->qos_supported(deadline); };
  ops.path_query = [&](const sa::PathQuery& q) { return client->path_records(q, deadline); };
  ops.sa_mpr_supported = [&] { return client->multipath_supported(deadline); };
  ops.multipath_query = [&](const sa::PathQuery& q) {
    return client->multipath_records(q, deadline);
  };
  ops.set_path = [id](ibv_path_data* data, size_t len) {
    auto set = real_rdmacm().set_option;
    return set == nullptr ? -1 : set(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, data, len);
  };
  ops.consume_route_resolved = [id, deadline] {
    const RdmacmCalls& real = real_rdmacm();
    rdma_cm_event* ev = nullptr;
    if (real.ack_cm_event == nullptr ||
        get_cm_event_within(real.get_cm_event, id->channel, route_event_wait(deadline), &ev) != 0)
      return -1;
    bool ok = ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && ev->status == 0;
    real.ack_cm_event(ev);
    return ok ? 0 : -1;
  };
  rdmacm::IbRouteResult r = rdmacm::resolve_ib_route(in, st.synchronous, ops, c.mpr);
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
