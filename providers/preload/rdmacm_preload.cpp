// The preload module's rdma_cm layer: interposes rdma_create_id, rdma_set_option,
// rdma_resolve_route, rdma_connect, rdma_accept and rdma_destroy_id in unmodified programs. On
// RoCE it matches the host policy on Service-ID and QoS-Class, gives the id the level's traffic
// class as TOS before route resolution and tells the verbs layer (QP registry) the CM ports and
// the decision; on InfiniBand it asks the SA with them and installs the answer. Any failure:
// log once and do what the program asked.
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "preload_common.h"
#include "rdma-qos/config/knobs.h"
#include "rdma-qos/providers/flow_label_mode.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/rdmacm-qos/socket_qos.h"
#include "rdma-qos/sa-client/sa_client.h"

namespace rdmaqos::rdmacm {
namespace {

using providers::log_at;
using providers::log_once_at;
using providers::log_once_impl;
using providers::LogLevel;

template <typename Fn>
Fn next_symbol(const char* name) {
  void* sym = dlvsym(RTLD_NEXT, name, "RDMACM_1.0");
  if (sym == nullptr) sym = dlsym(RTLD_NEXT, name);
  return reinterpret_cast<Fn>(sym);
}

using SetOptionFn = int (*)(rdma_cm_id*, int, int, void*, size_t);
using ResolveRouteFn = int (*)(rdma_cm_id*, int);
using ConnectFn = int (*)(rdma_cm_id*, rdma_conn_param*);
using DestroyIdFn = int (*)(rdma_cm_id*);

SetOptionFn real_set_option() {
  static SetOptionFn fn = next_symbol<SetOptionFn>("rdma_set_option");
  return fn;
}

struct Layer {
  CmSettings settings;
  std::string record_path;
  // sa knob: auto and on query the SA on InfiniBand ports and fall back to the kernel's route
  // resolution when it fails (a warning once per reason); on also warns when MultiPathRecord
  // cannot be used (info under auto); off never queries.
  enum class Sa { kAuto, kOn, kOff } sa = Sa::kAuto;
  bool mpr = false;  // mpr knob: MultiPathRecord when the SA advertises it
  rdma_qos_sa_options sa_options{};
  providers::FlowLabelSetting flow_label;  // for the labels of UD address handles
};

unsigned knob_number(const config::HostConfig& c, std::string_view key) {
  try {
    return static_cast<unsigned>(std::stoul(c.text(key), nullptr, 0));
  } catch (...) {
    return 0;
  }
}

// Loaded on first use, once.
const Layer& layer() {
  static Layer* l = [] {
    auto* out = new Layer;
    try {
      const config::HostConfig* c = providers::preload_config();
      if (c == nullptr) return out;
      for (const auto& k : config::knobs())
        if (!k.deprecated_env.empty() && c->get(k.key).origin == k.deprecated_env)
          log_once_at(LogLevel::kWarn, std::string(k.deprecated_env),
                      fmt::format("{} is a deprecated name; use {}", k.deprecated_env, k.env));
      out->settings = cm_settings_from(c->text("class"), c->text("tos"), c->text("service_id"),
                                       c->text("roce_sl2tclass"));
      out->record_path = c->text("test_record");
      out->sa = c->text("sa") == "off"  ? Layer::Sa::kOff
                : c->text("sa") == "on" ? Layer::Sa::kOn
                                        : Layer::Sa::kAuto;
      out->mpr = c->text("mpr") == "1";
      if (auto f = providers::parse_flow_label_setting(c->text("flow_label"))) out->flow_label = *f;
      out->sa_options.sa_lid = static_cast<uint16_t>(knob_number(*c, "sa_lid"));
      out->sa_options.timeout_ms = static_cast<int>(knob_number(*c, "sa_timeout_ms"));
      out->sa_options.retries = static_cast<int>(knob_number(*c, "sa_retries"));
      out->sa_options.cache_ttl_ms = knob_number(*c, "cache_ttl") * 1000;
      out->sa_options.cache_capacity = 1024;
      const auto& file = c->get("policy_file");
      std::ifstream in(file.text);
      if (!in) {
        // The default file is optional; one named by the administrator must exist.
        if (file.source != config::Source::kDefault)
          log_once_impl("policy_open", fmt::format("cannot read the policy file {}; rdma_cm "
                                                   "connections keep the stock QoS",
                                                   file.text));
        return out;
      }
      std::stringstream text;
      text << in.rdbuf();
      HostPolicy p = load_host_policy(text.str(), file.text);
      for (const auto& m : p.messages) log_once_impl(m, m);
      if (!p.policy)
        log_once_at(LogLevel::kError, "policy_errors",
                    fmt::format("the policy {} has errors; rdma_cm connections keep the stock QoS",
                                file.text));
      out->settings.policy = p.policy;
    } catch (...) {
      log_once_at(LogLevel::kError, "cm_config",
                  "cannot load the rdma_cm settings; stock behaviour");
    }
    return out;
  }();
  return *l;
}

// The configuration and the policy are read when the program starts, not inside its first
// connection setup (parsing and compiling a policy costs milliseconds).
__attribute__((constructor)) void load_at_start() {
  try {
    layer();
  } catch (...) {
  }
}

bool is_ethernet(rdma_cm_id* id) {
  return providers::port_link_layer(id->verbs, id->port_num) == IBV_LINK_LAYER_ETHERNET;
}

std::string opt(const auto& v) {
  return v ? fmt::format("{}", static_cast<unsigned>(*v)) : "null";
}

void record(const Layer& l, const char* call, const std::optional<CmDecision>& d, uint64_t sid,
            std::optional<uint16_t> qos_class, std::optional<uint8_t> tos_set,
            const providers::CmConnection* cm,
            std::optional<uint8_t> received_tclass = std::nullopt) {
  if (l.record_path.empty()) return;
  std::string line = fmt::format(
      R"({{"call":"{}","service_id":{},"qos_class":{},"level":"{}","sl":{},"traffic_class":{},)"
      R"("mtu_limit":{},"rate_limit":{},"tos_set":{},"received_tclass":{},"cm_dport":{},)"
      R"("cm_sport":{}}})",
      call, sid, opt(qos_class), d ? d->level : "", d ? fmt::format("{}", d->sl) : "null",
      d ? opt(d->traffic_class) : "null", d ? opt(d->mtu_limit) : "null",
      d ? opt(d->rate_limit) : "null", opt(tos_set), opt(received_tclass),
      cm ? fmt::format("{}", cm->dport) : "null", cm ? fmt::format("{}", cm->sport) : "null");
  providers::record_impl(l.record_path, line);
}

// The PKey host-side matching uses: the id's own (RoCE ports have the default 0xFFFF).
uint16_t id_pkey(rdma_cm_id* id) {
  uint16_t pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  return pkey != 0 ? pkey : 0xFFFF;
}

bool is_infiniband(rdma_cm_id* id) {
  return providers::port_link_layer(id->verbs, id->port_num) == IBV_LINK_LAYER_INFINIBAND;
}

// One SA client per (device, port), opened on first use and kept for the process.
rdma_qos_sa_client* sa_client(rdma_cm_id* id, const Layer& l) {
  static std::mutex mutex;
  static auto* clients = new std::map<std::pair<std::string, int>, rdma_qos_sa_client*>;
  std::lock_guard lock(mutex);
  std::pair<std::string, int> key{ibv_get_device_name(id->verbs->device), id->port_num};
  auto it = clients->find(key);
  if (it != clients->end()) return it->second;
  rdma_qos_sa_options o = l.sa_options;
  o.ca = key.first.c_str();
  o.port = key.second;
  rdma_qos_sa_error err{};
  rdma_qos_sa_client* c = rdma_qos_sa_open(&o, &err);
  if (c == nullptr)
    log_once_impl("sa_open", fmt::format("cannot reach the SA from {} port {} ({}); rdma_cm "
                                         "keeps the stock route resolution",
                                         key.first, key.second, err.message));
  (*clients)[key] = c;  // a failure is remembered too: no retry per connection
  return c;
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

// InfiniBand: query the SA with Service-ID and QoS-Class and install the answer. True when
// the route is resolved (the caller must not call the real rdma_resolve_route). The SA may take
// no longer than the program gave rdma_resolve_route (`timeout_ms`), so a silent SA costs a
// connection at most what the kernel's own query would have.
bool resolve_ib(rdma_cm_id* id, int timeout_ms) {
  const Layer& l = layer();
  if (l.sa == Layer::Sa::kOff || !is_infiniband(id)) return false;
  rdma_qos_sa_client* client = sa_client(id, l);
  if (client == nullptr) return false;
  IdState st = IdRegistry::instance().get(id);
  IbRouteInputs in;
  in.sgid = id->route.addr.addr.ibaddr.sgid;
  in.dgid = id->route.addr.addr.ibaddr.dgid;
  in.pkey = ntohs(id->route.addr.addr.ibaddr.pkey);
  in.service_id = effective_service_id(id->ps, &id->route.addr.dst_addr, st.inputs, l.settings);
  in.qos_class = effective_qos_class(st.inputs, l.settings);
  if (id->route.addr.src_addr.sa_family == AF_INET6) {
    uint32_t flowinfo = ntohl(id->route.addr.src_sin6.sin6_flowinfo);
    if ((flowinfo >> 20) & 0xFF) in.tclass = static_cast<uint8_t>(flowinfo >> 20);
  }
  IbRouteOps ops;
  ops.sa_qos_supported = [client] {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_qos_supported(client, &err);
  };
  ops.path_query = [client](const PathQuery& q, ibv_path_record* answer) {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_path_query(client, &q.record, q.comp_mask, answer, 1, &err);
  };
  ops.sa_mpr_supported = [client] {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_mpr_supported(client, &err);
  };
  ops.multipath_query = [client](const PathQuery& q, ibv_path_record* answer) {
    rdma_qos_sa_error err{};
    return rdma_qos_sa_multipath_query(client, &q.record, q.comp_mask, answer, 1, &err);
  };
  ops.set_path = [id](ibv_path_data* data, size_t len) {
    SetOptionFn set = real_set_option();
    return set == nullptr ? -1 : set(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, data, len);
  };
  ops.consume_route_resolved = [id] {
    using GetEventFn = int (*)(rdma_event_channel*, rdma_cm_event**);
    using AckEventFn = int (*)(rdma_cm_event*);
    static GetEventFn get = next_symbol<GetEventFn>("rdma_get_cm_event");
    static AckEventFn ack = next_symbol<AckEventFn>("rdma_ack_cm_event");
    rdma_cm_event* ev = nullptr;
    if (get == nullptr || ack == nullptr || get(id->channel, &ev) != 0) return -1;
    bool ok = ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && ev->status == 0;
    ack(ev);
    return ok ? 0 : -1;
  };
  IbRouteResult r;
  {
    SaDeadline bound(timeout_ms);
    r = resolve_ib_route(in, st.synchronous, ops, l.mpr);
  }
  if (!r.note.empty())
    log_once_at(l.sa == Layer::Sa::kOn ? LogLevel::kWarn : LogLevel::kInfo, "ib_mpr:" + r.note,
                r.note);
  if (!r.installed) {
    // Once per reason and process, under auto and on alike: the program goes on with the
    // kernel's route resolution, which knows nothing of the policy.
    log_once_impl("ib_fallback:" + r.why, r.why + "; the kernel's route resolution is used");
    if (providers::log_enabled(LogLevel::kDebug))
      log_at(LogLevel::kDebug,
             fmt::format("InfiniBand: Service-ID {} fell back: {}", hex(in.service_id), r.why));
    record(l, "rdma_resolve_route", std::nullopt, in.service_id, in.qos_class, std::nullopt,
           nullptr);
    return false;
  }
  if (!r.why.empty()) log_once_impl("ib_sync", r.why);
  // rdma_qos_query answers on InfiniBand too: the SA's SL, MTU and rate.
  CmDecision d = decision_from_path(*r.path, in.service_id, in.qos_class);
  IdRegistry::instance().set_decision(id, d);
  // Formatted only when it will be printed: this runs once per connection.
  if (providers::log_enabled(LogLevel::kDebug))
    log_at(LogLevel::kDebug,
           fmt::format("InfiniBand: Service-ID {} QoS-Class {}: the SA answered SL {} MTU code {} "
                       "rate code {}{}",
                       hex(in.service_id), in.qos_class ? fmt::format("{}", *in.qos_class) : "none",
                       d.sl, opt(d.mtu_limit), opt(d.rate_limit),
                       r.multipath ? " (MultiPathRecord)" : ""));
  record(l, "rdma_resolve_route", d, in.service_id, in.qos_class, std::nullopt, nullptr);
  return true;
}

// rsockets: what rsetsockopt(IP_TOS / SO_PRIORITY) asked for each socket, and, while rconnect
// runs, for the socket it connects (rsockets resolves the route inside rconnect, on this thread,
// for blocking sockets).
SocketQosTable& socket_qos() {
  static auto* t = new SocketQosTable;  // never destroyed: rclose may run at exit
  return *t;
}
thread_local std::optional<SocketQos> connecting_socket;
// rsockets keeps each stream socket's rdma_cm id private, but passes it to rdma_set_option for
// SO_REUSEADDR: rsetsockopt below asks for that option (with the socket's current value) while
// this is set, and rdma_set_option only notes the id, so the socket's QoS is tied to its id
// before it connects, blocking or not.
thread_local bool capturing_id = false;
thread_local rdma_cm_id* captured_id = nullptr;

using RsetsockoptFn = int (*)(int, int, int, const void*, socklen_t);

// The rdma_cm id of an rsockets stream socket, or null (datagram sockets, other versions).
rdma_cm_id* socket_id(int socket, RsetsockoptFn set) {
  using RgetsockoptFn = int (*)(int, int, int, void*, socklen_t*);
  static RgetsockoptFn get = next_symbol<RgetsockoptFn>("rgetsockopt");
  if (get == nullptr) return nullptr;
  int current = 0;
  socklen_t len = sizeof current;
  if (get(socket, SOL_SOCKET, SO_REUSEADDR, &current, &len) != 0) return nullptr;
  int saved = errno;
  captured_id = nullptr;
  capturing_id = true;
  set(socket, SOL_SOCKET, SO_REUSEADDR, &current, sizeof current);
  capturing_id = false;
  errno = saved;
  rdma_cm_id* id = captured_id;
  captured_id = nullptr;
  return id;
}

// Active side, before route resolution: decide, and set the level's TOS so the route (and the
// DSCP on the wire) carries it.
void before_resolve_route(rdma_cm_id* id) {
  const Layer& l = layer();
  if (!is_ethernet(id)) return;
  auto& ids = IdRegistry::instance();
  if (connecting_socket) {
    // rsockets passes no TOS to its id itself: give it the one the socket asked for.
    if (connecting_socket->tos && real_set_option() != nullptr) {
      uint8_t byte = *connecting_socket->tos;
      if (real_set_option()(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) == 0)
        ids.set_program_tos(id, byte);
    }
    if (connecting_socket->qos_class) ids.set_class(id, *connecting_socket->qos_class);
  }
  IdState st = ids.get(id);
  uint64_t sid = effective_service_id(id->ps, &id->route.addr.dst_addr, st.inputs, l.settings);
  auto qos_class = effective_qos_class(st.inputs, l.settings);
  auto d = decide_roce(sid, qos_class, id_pkey(id), l.settings);
  auto tos = tos_to_set(d, st.inputs, l.settings);
  if (tos && real_set_option() != nullptr) {
    uint8_t byte = *tos;
    if (real_set_option()(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) != 0)
      log_once_impl("set_tos", fmt::format("rdma_set_option(TOS {}) failed: {}; the connection "
                                           "keeps its TOS",
                                           byte, strerror(errno)));
  }
  if (d) ids.set_decision(id, *d);
  record(l, "rdma_resolve_route", d, sid, qos_class, tos, nullptr);
}

bool is_ud(rdma_cm_id* id) {
  return id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB || id->qp_type == IBV_QPT_UD;
}

// The GID a RoCE peer's address handles name: the IPv6 address, or IPv4 mapped (::ffff:a.b.c.d).
std::optional<ibv_gid> peer_gid(const sockaddr* addr) {
  ibv_gid gid{};
  if (addr->sa_family == AF_INET6) {
    std::memcpy(gid.raw, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, 16);
  } else if (addr->sa_family == AF_INET) {
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
    std::memcpy(gid.raw + 12, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, 4);
  } else {
    return std::nullopt;
  }
  return gid;
}

ibv_pd* id_pd(rdma_cm_id* id) {
  return id->pd != nullptr ? id->pd : id->qp != nullptr ? id->qp->pd : nullptr;
}

// UD: address handles the program creates for the id's peer (from a work completion, say) get
// the id's decision too; which (PD, GID) each id registered, to erase it with the id.
std::mutex ud_peer_mutex;
std::map<const rdma_cm_id*, std::pair<const ibv_pd*, ibv_gid>>& ud_peers() {
  static auto* m = new std::map<const rdma_cm_id*, std::pair<const ibv_pd*, ibv_gid>>;
  return *m;
}

void register_ud_peer(rdma_cm_id* id, const std::optional<CmDecision>& d,
                      const providers::CmConnection& cm) {
  ibv_pd* pd = id_pd(id);
  auto gid = peer_gid(&id->route.addr.dst_addr);
  auto label = ud_flow_label(cm, layer().flow_label);
  if (pd == nullptr || !gid || (!d && !label)) return;
  providers::QpRegistry::instance().set_peer_decision(pd, *gid, to_qos_decision(d, label));
  std::lock_guard lock(ud_peer_mutex);
  ud_peers()[id] = {pd, *gid};
}

void erase_ud_peer(const rdma_cm_id* id) {
  std::lock_guard lock(ud_peer_mutex);
  auto it = ud_peers().find(id);
  if (it == ud_peers().end()) return;
  const auto [pd, gid] = it->second;
  ud_peers().erase(it);
  // Another live id on the same PD reaching the same peer keeps the peer's decision.
  for (const auto& [other, peer] : ud_peers())
    if (peer.first == pd && std::memcmp(&peer.second, &gid, sizeof gid) == 0) return;
  providers::QpRegistry::instance().erase_peer(pd, gid);
}

// Both sides, when the QP is about to reach RTR: tell the verbs layer.
void register_qp(rdma_cm_id* id, bool passive) {
  if (id->qp == nullptr || !is_ethernet(id)) return;
  const Layer& l = layer();
  auto& ids = IdRegistry::instance();
  providers::CmConnection cm =
      cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, passive);
  // The passive side tells from the REQ's path record whether the active side's label was the
  // program's own.
  if (passive && id->route.path_rec != nullptr && id->route.num_paths > 0)
    cm.application_label =
        passive_application_label(ntohl(id->route.path_rec[0].flow_label), cm.dport, cm.sport);
  if (cm.dport != 0 && cm.sport != 0) providers::QpRegistry::instance().set_cm(id->qp, cm);
  IdState st = ids.get(id);
  std::optional<CmDecision> d = st.decision;
  // Without a decision (no policy) the record still names what was matched on.
  uint64_t sid = d ? d->service_id : effective_service_id(id->ps, cm.dport, st.inputs, l.settings);
  std::optional<uint16_t> qos_class = d ? d->qos_class : effective_qos_class(st.inputs, l.settings);
  std::optional<uint8_t> received_tclass;
  if (passive) {
    // The REQ's path (the connection's path record) carries the active side's TOS.
    if (id->route.path_rec != nullptr && id->route.num_paths > 0)
      received_tclass = id->route.path_rec[0].traffic_class;
    d = st.inputs.class_override
            ? decide_roce(sid, qos_class, id_pkey(id), l.settings)
            : decide_roce_passive(sid, received_tclass, id_pkey(id), l.settings);
    if (d) {
      if (!st.inputs.class_override) qos_class = d->qos_class;
      // The active side's traffic class arrives in the REQ and both directions follow it, as
      // the kernel does: the passive side's own match sets SL, MTU and rate only.
      d->traffic_class.reset();
      ids.set_decision(id, *d);
    }
  }
  if (d) providers::QpRegistry::instance().set_decision(id->qp, to_qos_decision(*d));
  if (is_ud(id)) register_ud_peer(id, d, cm);
  record(l, passive ? "rdma_accept" : "rdma_connect", d, sid, qos_class, std::nullopt, &cm,
         received_tclass);
}

bool is_roce_v2(rdma_cm_id* id, uint8_t sgid_index) {
  if (!is_ethernet(id)) return false;
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(id->verbs, id->port_num, sgid_index, &entry, 0) != 0) return false;
  return entry.gid_type == IBV_GID_TYPE_ROCE_V2;
}

// UD ids: the address handle attributes librdmacm hands the program get the id's decision, so
// the program's ibv_create_ah carries it (the active side on ESTABLISHED, the passive side when
// its CONNECT_REQUEST carries an address).
void on_ud_event(rdma_cm_event* ev) {
  rdma_cm_id* id = ev->id;
  if (id == nullptr || !is_ud(id) || !is_ethernet(id)) return;
  bool passive = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
  if (ev->event != RDMA_CM_EVENT_ESTABLISHED && !passive) return;
  ibv_ah_attr& ah = ev->param.ud.ah_attr;
  if (passive && !ah.is_global) return;  // no address in the request
  const Layer& l = layer();
  auto& ids = IdRegistry::instance();
  providers::CmConnection cm =
      cm_connection(&id->route.addr.src_addr, &id->route.addr.dst_addr, passive);
  IdState st = ids.get(id);
  std::optional<CmDecision> d = st.decision;
  uint64_t sid = effective_service_id(id->ps, cm.dport, st.inputs, l.settings);
  if (passive) {
    cm.application_label = passive_application_label(ah.grh.flow_label, cm.dport, cm.sport);
    d = decide_roce_passive(sid, ah.grh.traffic_class, id_pkey(id), l.settings);
    if (d) {
      d->traffic_class.reset();  // the active side's traffic class is kept, as for connections
      ids.set_decision(id, *d);
    }
  }
  bool changed = apply_ud_decision(ah, d, cm, l.flow_label, is_roce_v2(id, ah.grh.sgid_index));
  if (l.record_path.empty()) return;
  providers::record_impl(
      l.record_path,
      fmt::format(R"({{"call":"rdma_get_cm_event","event":"{}","service_id":{},"level":"{}",)"
                  R"("sl":{},"traffic_class":{},"flow_label":{},"static_rate":{},)"
                  R"("cm_dport":{},"cm_sport":{},"changed":{}}})",
                  passive ? "connect_request" : "established", d ? d->service_id : sid,
                  d ? d->level : "", ah.sl, ah.grh.traffic_class, ah.grh.flow_label, ah.static_rate,
                  cm.dport, cm.sport, changed ? "true" : "false"));
}

}  // namespace
}  // namespace rdmaqos::rdmacm

using rdmaqos::rdmacm::ConnectFn;
using rdmaqos::rdmacm::DestroyIdFn;
using rdmaqos::rdmacm::ResolveRouteFn;
using rdmaqos::rdmacm::SetOptionFn;

extern "C" {

__attribute__((visibility("default"))) int rdma_set_option(rdma_cm_id* id, int level, int optname,
                                                           void* optval, size_t optlen) {
  SetOptionFn next = rdmaqos::rdmacm::real_set_option();
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  if (rdmaqos::rdmacm::capturing_id && level == RDMA_OPTION_ID &&
      optname == RDMA_OPTION_ID_REUSEADDR) {
    rdmaqos::rdmacm::captured_id = id;
    return 0;
  }
  // The kernel takes the TOS as one byte; socket-style callers pass an int.
  uint8_t tos_byte = 0;
  if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optval != nullptr &&
      optlen == sizeof(int) && *static_cast<int*>(optval) >= 0 &&
      *static_cast<int*>(optval) <= 255) {
    tos_byte = static_cast<uint8_t>(*static_cast<int*>(optval));
    optval = &tos_byte;
    optlen = sizeof tos_byte;
  }
  int rc = next(id, level, optname, optval, optlen);
  if (rc == 0 && id != nullptr && level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS &&
      optval != nullptr && optlen >= 1) {
    try {
      rdmaqos::rdmacm::IdRegistry::instance().set_program_tos(id, *static_cast<uint8_t*>(optval));
    } catch (...) {
    }
  }
  return rc;
}

__attribute__((visibility("default"))) int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  static ResolveRouteFn next = rdmaqos::rdmacm::next_symbol<ResolveRouteFn>("rdma_resolve_route");
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  if (id != nullptr) {
    try {
      if (rdmaqos::rdmacm::resolve_ib(id, timeout_ms)) return 0;
      rdmaqos::rdmacm::before_resolve_route(id);
    } catch (...) {
      rdmaqos::providers::log_once_impl("resolve_route_exception",
                                        "internal error before rdma_resolve_route; stock QoS");
    }
  }
  return next(id, timeout_ms);
}

__attribute__((visibility("default"))) int rdma_connect(rdma_cm_id* id,
                                                        rdma_conn_param* conn_param) {
  static ConnectFn next = rdmaqos::rdmacm::next_symbol<ConnectFn>("rdma_connect");
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  if (id != nullptr) {
    try {
      rdmaqos::rdmacm::register_qp(id, false);
    } catch (...) {
      rdmaqos::providers::log_once_impl("connect_exception",
                                        "internal error in rdma_connect; stock QoS");
    }
  }
  return next(id, conn_param);
}

__attribute__((visibility("default"))) int rdma_accept(rdma_cm_id* id,
                                                       rdma_conn_param* conn_param) {
  static ConnectFn next = rdmaqos::rdmacm::next_symbol<ConnectFn>("rdma_accept");
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  if (id != nullptr) {
    try {
      rdmaqos::rdmacm::register_qp(id, true);
    } catch (...) {
      rdmaqos::providers::log_once_impl("accept_exception",
                                        "internal error in rdma_accept; stock QoS");
    }
  }
  return next(id, conn_param);
}

__attribute__((visibility("default"))) int rdma_get_cm_event(rdma_event_channel* channel,
                                                             rdma_cm_event** event) {
  using GetEventFn = int (*)(rdma_event_channel*, rdma_cm_event**);
  static GetEventFn next = rdmaqos::rdmacm::next_symbol<GetEventFn>("rdma_get_cm_event");
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  int rc = next(channel, event);
  if (rc == 0 && event != nullptr && *event != nullptr) {
    int saved = errno;
    try {
      rdmaqos::rdmacm::on_ud_event(*event);
    } catch (...) {
      rdmaqos::providers::log_once_impl("cm_event_exception",
                                        "internal error in rdma_get_cm_event; UD QoS unchanged");
    }
    errno = saved;
  }
  return rc;
}

// rsockets rejects IP_TOS and SO_PRIORITY (or passes the int where one byte is required): take
// them here, as an int or a byte, and apply them when the socket connects.
__attribute__((visibility("default"))) int rsetsockopt(int socket, int level, int optname,
                                                       const void* optval, socklen_t optlen) {
  using rdmaqos::rdmacm::RsetsockoptFn;
  static RsetsockoptFn next = rdmaqos::rdmacm::next_symbol<RsetsockoptFn>("rsetsockopt");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  bool tos = level == IPPROTO_IP && optname == IP_TOS;
  bool priority = level == SOL_SOCKET && optname == SO_PRIORITY;
  if ((!tos && !priority) || optval == nullptr || optlen < 1)
    return next(socket, level, optname, optval, optlen);
  int value = optlen >= static_cast<socklen_t>(sizeof(int)) ? *static_cast<const int*>(optval)
                                                            : *static_cast<const uint8_t*>(optval);
  if (value < 0 || value > (tos ? 255 : 0xFFF)) {
    errno = EINVAL;
    return -1;
  }
  int saved = errno;
  if (next(socket, level, optname, optval, optlen) != 0) errno = saved;  // ours from here
  try {
    if (tos)
      rdmaqos::rdmacm::socket_qos().set_tos(socket, static_cast<uint8_t>(value));
    else
      rdmaqos::rdmacm::socket_qos().set_class(socket, static_cast<uint16_t>(value));
    if (rdma_cm_id* id = rdmaqos::rdmacm::socket_id(socket, next)) {
      auto& ids = rdmaqos::rdmacm::IdRegistry::instance();
      if (!tos) {
        ids.set_class(id, static_cast<uint16_t>(value));
      } else if (SetOptionFn set = rdmaqos::rdmacm::real_set_option()) {
        uint8_t byte = static_cast<uint8_t>(value);
        if (set(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &byte, sizeof byte) == 0)
          ids.set_program_tos(id, byte);
      }
    }
  } catch (...) {
    rdmaqos::providers::log_once_impl("rsetsockopt", "cannot record a socket's TOS; ignored");
  }
  errno = saved;
  return 0;
}

__attribute__((visibility("default"))) int rconnect(int socket, const sockaddr* addr,
                                                    socklen_t addrlen) {
  using RconnectFn = int (*)(int, const sockaddr*, socklen_t);
  static RconnectFn next = rdmaqos::rdmacm::next_symbol<RconnectFn>("rconnect");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  try {
    rdmaqos::rdmacm::connecting_socket = rdmaqos::rdmacm::socket_qos().find(socket);
  } catch (...) {
  }
  int rc = next(socket, addr, addrlen);
  rdmaqos::rdmacm::connecting_socket.reset();
  return rc;
}

// The socket's QoS is forgotten before the descriptor is released: once rclose returns, another
// thread's rsocket may get the same number and must start without it.
__attribute__((visibility("default"))) int rclose(int socket) {
  using RcloseFn = int (*)(int);
  static RcloseFn next = rdmaqos::rdmacm::next_symbol<RcloseFn>("rclose");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  try {
    rdmaqos::rdmacm::socket_qos().erase(socket);
  } catch (...) {
  }
  return next(socket);
}

// Ids created without an event channel are synchronous: librdmacm gives them a private
// channel, and an event the kernel raises for them must be consumed by whoever caused it.
__attribute__((visibility("default"))) int rdma_create_id(rdma_event_channel* channel,
                                                          rdma_cm_id** id, void* context,
                                                          rdma_port_space ps) {
  using CreateIdFn = int (*)(rdma_event_channel*, rdma_cm_id**, void*, rdma_port_space);
  static CreateIdFn next = rdmaqos::rdmacm::next_symbol<CreateIdFn>("rdma_create_id");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int rc = next(channel, id, context, ps);
  if (rc == 0 && channel == nullptr && id != nullptr && *id != nullptr) {
    try {
      rdmaqos::rdmacm::IdRegistry::instance().set_synchronous(*id);
    } catch (...) {
    }
  }
  return rc;
}

__attribute__((visibility("default"))) int rdma_destroy_id(rdma_cm_id* id) {
  static DestroyIdFn next = rdmaqos::rdmacm::next_symbol<DestroyIdFn>("rdma_destroy_id");
  if (next == nullptr) {  // no librdmacm behind us: nothing could succeed
    errno = ENOSYS;
    return -1;
  }
  int rc = next(id);
  if (rc == 0) {
    try {
      rdmaqos::rdmacm::IdRegistry::instance().erase(id);
      rdmaqos::rdmacm::erase_ud_peer(id);
    } catch (...) {
    }
  }
  return rc;
}

}  // extern "C"
