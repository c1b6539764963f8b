// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// InfiniBand route resolution through the SA: the PathRecord query with the policy's inputs sent
// by the port's C++ SA client (sa::SharedClient, shared by the program's threads), the answer
// installed as the id's route (see cm_layer.h resolve_ib). An id with an event channel has its
// query run by a route worker (route_workers.h) while rdma_resolve_route returns; a synchronous
// id waits for it. The record is a value from the SA's answer to the kernel's wire layout;
// nothing goes through the C API.
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cm_event_wait.h"
#include "cm_layer.h"
#include "ib_route_sa.h"
#include "ib_route_sequence.h"
#include "log.h"
#include "rdma-qos/sa-client/shared_client.h"
#include "real_calls.h"
#include "retry_backoff.h"
#include "route_workers.h"
#include "service_or_own_paths.h"

namespace rdmaqos::preload {
namespace {

using rdmacm::IdRegistry;

// A failed open is tried again after 1 s, then twice as long each time up to 30 s.
constexpr std::chrono::milliseconds kOpenRetryFirst{1000};
constexpr std::chrono::milliseconds kOpenRetryMax{30000};

struct PortSa {
  // What callers get: the node's path service first (ServiceOrOwnPaths), or, with no service
  // configured, the process's own client.
  std::shared_ptr<sa::PortPaths> paths;
  std::shared_ptr<sa::SharedClient> client;  // the process's own, over umad
  RetryBackoff open_retry{kOpenRetryFirst, kOpenRetryMax};
  // An SA that timed out or could not be reached is not asked again before this (sa_backoff).
  RetryBackoff::Clock::time_point down_until{};
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

// The process's own client of the port (the map's lock held), opened now unless a failed open
// is still backing off.
std::shared_ptr<sa::SharedClient> own_client_locked(PortSa& port,
                                                    const std::pair<std::string, int>& key,
                                                    const CmConfig& c) {
  if (port.client) return port.client;
  auto now = RetryBackoff::Clock::now();
  if (!port.open_retry.may_try(now)) return nullptr;
  sa::ClientOptions o = c.sa_options;
  o.port.ca = key.first;
  o.port.port = key.second;
  o.sa_lid = config::port_lid_of(c.sa_lids, key.first, static_cast<uint32_t>(key.second));
  auto opened =
      sa::SharedClient::open(o, c.path_cache ? &*c.path_cache : nullptr, kRouteWorkers + 1);
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

std::shared_ptr<sa::PortPaths> own_port_client(const std::pair<std::string, int>& key) {
  std::lock_guard lock(port_sa_mutex);
  return own_client_locked((*port_sa_map)[key], key, cm_config());
}

}  // namespace

std::shared_ptr<sa::PortPaths> port_sa_client(const std::string& device, int port_num,
                                              const CmConfig& c) {
  std::lock_guard lock(port_sa_mutex);
  std::pair<std::string, int> key{device, port_num};
  PortSa& port = (*port_sa_map)[key];
  if (RetryBackoff::Clock::now() < port.down_until) return nullptr;
  if (c.path_service.empty()) return own_client_locked(port, key, c);
  if (!port.paths) {
    sa::PathServiceOptions o;
    o.socket_path = c.path_service;
    o.device = device;
    o.port = port_num;
    o.connections = kRouteWorkers + 1;
    // Absent is routine (a node without rdma-qos-lsd): info; gone while in use: a warning.
    auto note = [](const std::string& reason, const std::string& message) {
      log_once_at(reason.starts_with("path_service_absent") ? Priority::kInfo : Priority::kWarning,
                  reason, message);
    };
    port.paths = std::make_shared<ServiceOrOwnPaths>(
        std::move(o), [key] { return own_port_client(key); }, note);
  }
  return port.paths;
}

void mark_port_sa_down(const std::string& device, int port_num, std::chrono::seconds hold) {
  if (hold.count() <= 0) return;
  std::lock_guard lock(port_sa_mutex);
  (*port_sa_map)[{device, port_num}].down_until = RetryBackoff::Clock::now() + hold;
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

namespace {

// Whether an SA error says the SA did not answer (rather than answered no).
bool sa_unreachable(const rdmaqos::Error& e) {
  return e.code == rdmaqos::ErrorCode::kTimeout || e.code == rdmaqos::ErrorCode::kTransport;
}

// One resolution: the id's inputs, read on the program's thread (the id's address is stable
// from ADDR_RESOLVED on), and what the query needs, kept by a worker until it is done.
struct Resolution {
  rdma_cm_id* id = nullptr;
  int timeout_ms = 0;
  bool synchronous = false;
  std::string device;
  int port_num = 0;
  std::shared_ptr<sa::PortPaths> client;
  rdmacm::IbRouteInputs in;
  sa::Deadline deadline;
};

// The module's host of the route sequence: the port's SA client within the program's budget,
// and the id through the real librdmacm. `before_install` runs just before the id is used
// (false: leave the id alone).
class SaRouteHost final : public IbRouteHost {
 public:
  SaRouteHost(const Resolution& res, const std::function<bool()>& before_install)
      : res_(res), before_install_(before_install) {}

  rdmaqos::Result<bool> sa_qos_supported() override {
    return seen(res_.client->qos_supported(res_.deadline));
  }
  rdmacm::PathAnswer path_records(const sa::PathQuery& q) override {
    return seen(res_.client->path_records(q, res_.deadline));
  }
  rdmaqos::Result<bool> sa_mpr_supported() override {
    return seen(res_.client->multipath_supported(res_.deadline));
  }
  rdmacm::PathAnswer multipath_records(const sa::PathQuery& q) override {
    return seen(res_.client->multipath_records(q, res_.deadline));
  }
  int set_path(ibv_path_data& path, const sa::PathRecord& answer) override {
    if (!before_install_()) {
      left_alone_ = true;
      return -1;
    }
    // Known before the kernel queues ROUTE_RESOLVED: the program may ask as soon as it reads it.
    decision_ = rdmacm::decision_from_path(answer, res_.in.service_id, res_.in.qos_class);
    IdRegistry::instance().set_decision(res_.id, *decision_);
    auto set = real_rdmacm().set_option;
    int rc =
        set == nullptr ? -1 : set(res_.id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &path, sizeof path);
    if (rc != 0) {
      // Refused: the kernel's own route resolution follows, and the connection must not carry
      // (in its QP's attributes or its tag) a level whose path was never installed.
      const int saved = errno;
      IdRegistry::instance().clear_decision(res_.id);
      decision_.reset();
      errno = saved;
    }
    return rc;
  }
  int consume_route_resolved() override {
    const RdmacmCalls& real = real_rdmacm();
    rdma_cm_event* ev = nullptr;
    if (real.ack_cm_event == nullptr ||
        get_cm_event_within(real.get_cm_event, res_.id->channel, route_event_wait(res_.deadline),
                            &ev) != 0)
      return -1;
    bool ok = ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && ev->status == 0;
    real.ack_cm_event(ev);
    return ok ? 0 : -1;
  }

  // An SA call failed because the SA did not answer (rather than answered no).
  bool unreachable() const { return unreachable_; }
  // The id was destroyed before the answer could be installed: it was not touched.
  bool left_alone() const { return left_alone_; }
  // The decision made of the path last handed to the kernel (set_path), made once.
  const std::optional<rdmacm::CmDecision>& decision() const { return decision_; }

 private:
  template <typename T>
  rdmaqos::Result<T> seen(rdmaqos::Result<T> r) {
    if (!r && sa_unreachable(r.error())) unreachable_ = true;
    return r;
  }

  const Resolution& res_;
  const std::function<bool()>& before_install_;
  bool unreachable_ = false;
  bool left_alone_ = false;
  std::optional<rdmacm::CmDecision> decision_;
};

// The query and, with its answer, the path installed. Logged and recorded (test hook) alike on
// a route worker and on the caller's thread.
enum class Outcome { kInstalled, kFallBack, kLeftAlone };

Outcome query_and_install(const Resolution& res, const std::function<bool()>& before_install) {
  const CmConfig& c = cm_config();
  SaRouteHost host(res, before_install);
  IbRouteResult r = resolve_ib_route(res.in, res.synchronous, host, c.mpr);
  const bool left_alone = host.left_alone();
  const bool unreachable = host.unreachable();
  if (left_alone) return Outcome::kLeftAlone;
  if (r.multipath_unused) {
    const std::string& note = r.multipath_unused->message;
    log_once_at(c.sa == CmConfig::Sa::kOn ? Priority::kWarning : Priority::kInfo, "ib_mpr:" + note,
                note);
  }
  if (!r.installed) {
    const std::string& why = r.installed.error().message;
    if (unreachable) mark_port_sa_down(res.device, res.port_num, c.sa_backoff);
    // Once per reason and process, under auto and on alike: the program goes on with the
    // kernel's route resolution, which knows nothing of the policy.
    log_once("ib_fallback:" + why, why + "; the kernel's route resolution is used");
    if (log_enabled(Priority::kDebug))
      log_at(Priority::kDebug,
             fmt::format("InfiniBand: Service-ID {} fell back: {} ({})", hex(res.in.service_id),
                         why, rdmaqos::error_code_name(r.installed.error().code)));
    record_decision(c, "rdma_resolve_route", std::nullopt, res.in.service_id, res.in.qos_class,
                    std::nullopt, nullptr);
    return Outcome::kFallBack;
  }
  if (r.event_unconsumed) log_once("ib_sync", r.event_unconsumed->message);
  // set_path made it of the same record (the first one the answer holds).
  const rdmacm::CmDecision d =
      host.decision()
          ? *host.decision()
          : rdmacm::decision_from_path(*r.installed, res.in.service_id, res.in.qos_class);
  // Formatted only when it will be printed: this runs once per connection.
  if (log_enabled(Priority::kDebug))
    log_at(
        Priority::kDebug,
        fmt::format("InfiniBand: Service-ID {} QoS-Class {}: the SA answered SL {} MTU code {} "
                    "rate code {}{}",
                    hex(res.in.service_id),
                    res.in.qos_class ? fmt::format("{}", *res.in.qos_class) : "none", d.sl,
                    opt(d.mtu_limit), opt(d.rate_limit), r.multipath ? " (MultiPathRecord)" : ""));
  record_decision(c, "rdma_resolve_route", d, res.in.service_id, res.in.qos_class, std::nullopt,
                  nullptr);
  return Outcome::kInstalled;
}

// A route worker's job: the query, then the path installed or, on any failure, the real
// rdma_resolve_route, whose event the kernel delivers as it would have without the module.
void resolve_in_background(const Resolution& res, const std::shared_ptr<PendingRoute>& pending) {
  bool holding = false;
  auto hold = [&] { return holding || (holding = begin_route_install(*pending)); };
  Outcome o = Outcome::kFallBack;
  try {
    o = query_and_install(res, hold);
  } catch (...) {
    log_once("resolve_route_worker_exception",
             "internal error resolving a route in the background; stock QoS");
  }
  if (o == Outcome::kFallBack && hold()) {
    auto next = real_rdmacm().resolve_route;
    if (next == nullptr || next(res.id, res.timeout_ms) != 0)
      log_once("resolve_route_fallback_failed",
               "rdma_resolve_route, called after the SA query failed, failed too: the program "
               "gets no ROUTE_RESOLVED for that id");
  }
  end_pending_route(pending);
}

}  // namespace

// The SA may take no longer than the program gave rdma_resolve_route (`timeout_ms`), so a
// silent SA costs a connection at most what the kernel's own query would have, and an id with an
// event channel not even that: its program's thread returns at once.
bool resolve_ib(rdma_cm_id* id, int timeout_ms) {
  const CmConfig& c = cm_config();
  if (c.sa == CmConfig::Sa::kOff) return false;
  Resolution res;
  res.id = id;
  res.timeout_ms = timeout_ms;
  res.device = ibv_get_device_name(id->verbs->device);
  res.port_num = id->port_num;
  res.client = port_sa_client(res.device, res.port_num, c);
  if (!res.client) return false;
  rdmacm::IdState st = IdRegistry::instance().get(id);
  res.synchronous = st.synchronous;
  rdmacm::IbRouteInputs& in = res.in;
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
  res.deadline = sa::deadline_after(std::chrono::milliseconds(timeout_ms));
  if (!res.synchronous) {
    std::shared_ptr<PendingRoute> pending = start_pending_route(id);
    if (!pending) return false;  // another thread's call on the id came first: the kernel answers
    try {
      if (run_on_route_worker([res, pending] { resolve_in_background(res, pending); })) return true;
    } catch (...) {
      end_pending_route(pending);  // or the id would stay pending for good
      throw;
    }
    end_pending_route(pending);
    log_once("route_worker_start",
             "cannot start a route worker thread; the SA is asked while "
             "rdma_resolve_route waits");
  }
  return query_and_install(res, [] { return true; }) == Outcome::kInstalled;
}

}  // namespace rdmaqos::preload
